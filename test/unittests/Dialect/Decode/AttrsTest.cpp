//===- AttrsTest.cpp - decode dialect attributes through the C++ API ------===//

#include "TestUtil.h"

#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/IR/KnownTargets.h"

#include "mlir/AsmParser/AsmParser.h"

using namespace mlir;
using namespace fdc::decode;
using fdc::test::print;

namespace {

class AttrsTest : public fdc::test::DecodeTest {
protected:
  /// Parses `text` as a #decode.softmax and checks that it prints back as
  /// `text` and that the printed form parses to the same attribute.
  SoftmaxAttr roundTrip(StringRef text) {
    Attribute parsed = parseAttribute(text, &ctx);
    EXPECT_TRUE(parsed) << text.str();
    auto softmax = dyn_cast_or_null<SoftmaxAttr>(parsed);
    EXPECT_TRUE(softmax) << text.str();
    if (!softmax)
      return {};
    std::string printed = print(Attribute(softmax));
    EXPECT_EQ(printed, text.str());
    EXPECT_EQ(parseAttribute(printed, &ctx), parsed);
    EXPECT_TRUE(noDiagnostics());
    return softmax;
  }
};

TEST_F(AttrsTest, SoftmaxOnlineRoundTrip) {
  SoftmaxAttr attr = roundTrip("#decode.softmax<online>");
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr.getScheme(), SoftmaxScheme::online);
  EXPECT_FALSE(attr.getPhi());
  EXPECT_FALSE(attr.getLo());
  EXPECT_FALSE(attr.getHi());
  EXPECT_EQ(attr, SoftmaxAttr::get(&ctx, SoftmaxScheme::online, FloatAttr(),
                                   FloatAttr(), FloatAttr()));
}

TEST_F(AttrsTest, SoftmaxUnifiedMaxRoundTrip) {
  SoftmaxAttr attr = roundTrip(
      "#decode.softmax<unified_max, phi = 6.000000e+00, lo = -1.000000e+01, "
      "hi = 1.000000e+01>");
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr.getScheme(), SoftmaxScheme::unified_max);
  EXPECT_EQ(attr.getPhi().getValueAsDouble(), 6.0);
  EXPECT_EQ(attr.getLo().getValueAsDouble(), -10.0);
  EXPECT_EQ(attr.getHi().getValueAsDouble(), 10.0);
  EXPECT_TRUE(attr.getPhi().getType().isF32());
}

TEST_F(AttrsTest, SoftmaxUnifiedMaxPrintsNormalisedFloats) {
  // Any float spelling parses; the printer writes MLIR's canonical form.
  Attribute attr = parseAttribute(
      "#decode.softmax<unified_max, phi = 0.5, lo = -20.0, hi = 20.0>", &ctx);
  ASSERT_TRUE(attr);
  EXPECT_EQ(print(attr), "#decode.softmax<unified_max, phi = 5.000000e-01, "
                         "lo = -2.000000e+01, hi = 2.000000e+01>");
}

TEST_F(AttrsTest, SoftmaxBuiltThroughTheApiPrints) {
  Type f32 = Float32Type::get(&ctx);
  auto attr = SoftmaxAttr::get(
      &ctx, SoftmaxScheme::unified_max, FloatAttr::get(f32, 1.0),
      FloatAttr::get(f32, -8.0), FloatAttr::get(f32, 8.0));
  std::string text = print(Attribute(attr));
  EXPECT_EQ(text, "#decode.softmax<unified_max, phi = 1.000000e+00, "
                  "lo = -8.000000e+00, hi = 8.000000e+00>");
  EXPECT_EQ(parseAttribute(text, &ctx), Attribute(attr));
}

TEST_F(AttrsTest, SoftmaxParseErrors) {
  EXPECT_FALSE(parseAttribute("#decode.softmax<bogus>", &ctx));
  EXPECT_TRUE(oneDiagnostic("unknown softmax scheme 'bogus'; expected "
                            "'online' or 'unified_max'"));

  EXPECT_FALSE(parseAttribute(
      "#decode.softmax<unified_max, phi = 0.0, lo = 5.0, hi = 1.0>", &ctx));
  EXPECT_TRUE(oneDiagnostic("needs lo < hi, got lo = 5"));

  EXPECT_FALSE(parseAttribute(
      "#decode.softmax<unified_max, phi = 0.0, lo = -1.0, hi = 100.0>", &ctx));
  EXPECT_TRUE(oneDiagnostic("overflows exp() in f32 (must be <= 88)"));

  // unified_max without its parameters does not parse.
  EXPECT_FALSE(parseAttribute("#decode.softmax<unified_max>", &ctx));
  EXPECT_FALSE(takeDiagnostics().empty());
}

TEST_F(AttrsTest, SoftmaxGetCheckedDiagnostics) {
  Type f32 = Float32Type::get(&ctx);
  auto phi = FloatAttr::get(f32, 0.0);
  EXPECT_FALSE(SoftmaxAttr::getChecked([this] { return emitError(); }, &ctx,
                                       SoftmaxScheme::online, phi, FloatAttr(),
                                       FloatAttr()));
  EXPECT_TRUE(oneDiagnostic("#decode.softmax<online> takes no phi/lo/hi"));
  EXPECT_FALSE(SoftmaxAttr::getChecked([this] { return emitError(); }, &ctx,
                                       SoftmaxScheme::unified_max, phi,
                                       FloatAttr(), FloatAttr()));
  EXPECT_TRUE(
      oneDiagnostic("#decode.softmax<unified_max> needs phi, lo and hi"));
}

TEST_F(AttrsTest, ActivationEnum) {
  EXPECT_EQ(stringifyActivation(Activation::silu_gate_up), "silu_gate_up");
  EXPECT_EQ(symbolizeActivation("none"), Activation::none);
  EXPECT_FALSE(symbolizeActivation("gelu").has_value());
  Attribute attr = parseAttribute("#decode<activation silu_gate_up>", &ctx);
  ASSERT_TRUE(attr);
  EXPECT_EQ(print(attr), "#decode<activation silu_gate_up>");
}

TEST_F(AttrsTest, KnownTargetsHaveSharedMemoryBanks) {
  // Every known target, NVIDIA and AMD, has 32 banks of 4 bytes (the
  // attribute's defaults, so its printed form leaves them out).
  for (StringRef arch : getKnownGpuArchs()) {
    FailureOr<GpuTargetAttr> target =
        lookupGpuTarget(&ctx, arch, [this] { return emitError(); });
    ASSERT_TRUE(succeeded(target)) << arch.str();
    EXPECT_EQ(target->getSharedMemoryBanks(), 32) << arch.str();
    EXPECT_EQ(target->getSharedMemoryBankBytes(), 4) << arch.str();
    EXPECT_EQ(print(Attribute(*target)).find("shared_memory_bank"),
              std::string::npos)
        << arch.str();
  }
  // A library for several archs (which takes the first arch's banks) has
  // the known targets' 32 x 4.
  std::string archs[] = {"gfx1100", "gfx90a"};
  FailureOr<GpuTargetAttr> common =
      getCommonGpuTarget(&ctx, archs, [this] { return emitError(); });
  ASSERT_TRUE(succeeded(common));
  EXPECT_EQ(common->getSharedMemoryBanks(), 32);
  EXPECT_EQ(common->getSharedMemoryBankBytes(), 4);
  EXPECT_TRUE(noDiagnostics());
}

TEST_F(AttrsTest, GpuTargetSharedMemoryBanksRoundTrip) {
  StringRef text =
      "#decode.gpu_target<vendor = amd, arch = \"gfx1100\", subgroup = 32, "
      "units = 96, shared_memory = 65536, vector_bytes = 16, "
      "max_workgroup_size = 1024, mma = [], shared_memory_banks = 64, "
      "shared_memory_bank_bytes = 8>";
  auto target = dyn_cast_or_null<GpuTargetAttr>(parseAttribute(text, &ctx));
  ASSERT_TRUE(target);
  EXPECT_EQ(target.getSharedMemoryBanks(), 64);
  EXPECT_EQ(target.getSharedMemoryBankBytes(), 8);
  EXPECT_EQ(print(Attribute(target)), text.str());
  EXPECT_TRUE(noDiagnostics());
}

} // namespace
