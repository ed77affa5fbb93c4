//===- ModelOpTest.cpp - decode.model through the C++ API -----------------===//

#include "TestUtil.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace fdc::decode;

namespace {

// A one-weight model: embedding, tied lm_head, sampling; the cache passes
// through. A helper function beside @step must not be taken for it.
constexpr const char *kModel = R"mlir(
decode.model @toy attributes {config = {vocab_size = 16 : i64}} {
  decode.weight @"model.embed_tokens.weight" : tensor<16x8xf32>
  func.func @helper(%x: tensor<?xi32>) -> tensor<?xi32> {
    return %x : tensor<?xi32>
  }
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %slots: tensor<?xi32>, %temperature: tensor<?xf32>,
                  %top_k: tensor<?xi32>, %top_p: tensor<?xf32>,
                  %uniform: tensor<?xf32>,
                  %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>)
      -> (tensor<?x16xf32>, tensor<?xi32>,
          !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>) {
    %emb = decode.weight_ref @"model.embed_tokens.weight" : tensor<16x8xf32>
    %h = decode.embedding %emb[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %logits = decode.linear %h, %emb : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x16xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x16xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>
  }
}
)mlir";

// The same without a step function.
constexpr const char *kNoStep = R"mlir(
decode.model @nostep attributes {config = {}} {
  decode.weight @w : tensor<4xf32>
  func.func @helper(%x: tensor<?xi32>) -> tensor<?xi32> {
    return %x : tensor<?xi32>
  }
}
)mlir";

class ModelOpTest : public fdc::test::DecodeTest {
protected:
  OwningOpRef<ModuleOp> parse(const char *text, bool verify = true) {
    ParserConfig config(&ctx, verify);
    return parseSourceString<ModuleOp>(text, config);
  }

  ModelOp onlyModel(ModuleOp module) {
    auto models = module.getOps<ModelOp>();
    EXPECT_EQ(std::distance(models.begin(), models.end()), 1);
    return models.empty() ? ModelOp() : *models.begin();
  }
};

TEST_F(ModelOpTest, GetStepFunction) {
  OwningOpRef<ModuleOp> module = parse(kModel);
  ASSERT_TRUE(module) << ::testing::PrintToString(takeDiagnostics());
  ModelOp model = onlyModel(*module);
  ASSERT_TRUE(model);
  EXPECT_EQ(model.getSymName(), "toy");
  EXPECT_EQ(model.getConfig().getAs<IntegerAttr>("vocab_size").getInt(), 16);

  func::FuncOp step = model.getStepFunction();
  ASSERT_TRUE(step);
  EXPECT_EQ(step.getSymName(), "step");
  FunctionType type = step.getFunctionType();
  ASSERT_EQ(type.getNumInputs(), getStepArgumentNames().size());
  ASSERT_EQ(type.getNumResults(), 3u);
  auto cache = dyn_cast<KVCacheType>(type.getInput(7));
  ASSERT_TRUE(cache);
  EXPECT_EQ(cache.getRowBytes(), 32);
  EXPECT_EQ(type.getResult(2), Type(cache));
  EXPECT_EQ(cast<RankedTensorType>(type.getResult(0)).getDimSize(1), 16);

  // The step holds one sample op, fed by the logits it returns.
  auto samples = step.getOps<SampleOp>();
  ASSERT_EQ(std::distance(samples.begin(), samples.end()), 1);

  // The weight is a symbol of the model.
  auto weight = model.lookupSymbol<WeightOp>("model.embed_tokens.weight");
  ASSERT_TRUE(weight);
  EXPECT_TRUE(noDiagnostics());
}

TEST_F(ModelOpTest, StepArgumentNames) {
  std::vector<std::string> names;
  for (StringRef name : getStepArgumentNames())
    names.push_back(name.str());
  EXPECT_EQ(names, (std::vector<std::string>{"tokens", "positions", "slots",
                                             "temperature", "top_k", "top_p",
                                             "uniform", "cache"}));
}

TEST_F(ModelOpTest, GetStepFunctionIsNullWithoutStep) {
  OwningOpRef<ModuleOp> module = parse(kNoStep, /*verify=*/false);
  ASSERT_TRUE(module);
  ModelOp model = onlyModel(*module);
  ASSERT_TRUE(model);
  EXPECT_FALSE(model.getStepFunction());
}

TEST_F(ModelOpTest, VerifierRejectsModelWithoutStep) {
  EXPECT_FALSE(parse(kNoStep));
  EXPECT_TRUE(oneDiagnostic("has no step function ('func.func "
                            "@step')"));
}

} // namespace
