//===- TypesTest.cpp - decode dialect types through the C++ API -----------===//

#include "TestUtil.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/AsmParser/AsmParser.h"

using namespace mlir;
using namespace fdc::decode;
using fdc::test::print;

namespace {

class TypesTest : public fdc::test::DecodeTest {
protected:
  KVCacheType kvCache(int64_t layers, int64_t kvHeads, int64_t headDim,
                      Type elementType) {
    return KVCacheType::getChecked([this] { return emitError(); }, &ctx, layers,
                                   kvHeads, headDim, elementType);
  }
};

TEST_F(TypesTest, KVCacheRowBytesBF16) {
  auto type = KVCacheType::get(&ctx, 32, 8, 128, BFloat16Type::get(&ctx));
  EXPECT_EQ(type.getRowBytes(), 256);
  EXPECT_EQ(type.getLayers(), 32);
  EXPECT_EQ(type.getKvHeads(), 8);
  EXPECT_EQ(type.getHeadDim(), 128);
  EXPECT_EQ(
      print(Type(type)),
      "!decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, bf16>");
}

TEST_F(TypesTest, KVCacheRowBytesFloat) {
  EXPECT_EQ(
      KVCacheType::get(&ctx, 1, 1, 128, Float32Type::get(&ctx)).getRowBytes(),
      512);
  EXPECT_EQ(
      KVCacheType::get(&ctx, 1, 1, 64, Float16Type::get(&ctx)).getRowBytes(),
      128);
}

TEST_F(TypesTest, KVCacheRowBytesInt4) {
  // 4 groups of (fp16 scale, fp16 min) = 16 bytes, then 128 nibbles = 64 bytes.
  auto int4 = Int4Type::get(&ctx, 4);
  auto type = KVCacheType::get(&ctx, 32, 8, 128, int4);
  EXPECT_EQ(type.getRowBytes(), 80);
  EXPECT_EQ(print(Type(type)), "!decode.kv_cache<layers = 32, kv_heads = 8, "
                               "head_dim = 128, !decode.int4<groups = 4>>");
  // One group: 4 + 64 bytes.
  EXPECT_EQ(
      KVCacheType::get(&ctx, 1, 1, 128, Int4Type::get(&ctx, 1)).getRowBytes(),
      68);
}

TEST_F(TypesTest, KVCacheParsesAndUniques) {
  Type parsed = parseType(
      "!decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>", &ctx);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed, KVCacheType::get(&ctx, 2, 2, 32, Float32Type::get(&ctx)));
  EXPECT_TRUE(noDiagnostics());
}

TEST_F(TypesTest, KVCacheGetCheckedRejectsBadShapes) {
  Type f16 = Float16Type::get(&ctx);
  EXPECT_FALSE(kvCache(0, 8, 128, f16));
  EXPECT_TRUE(oneDiagnostic("!decode.kv_cache layers must be positive, got 0"));
  EXPECT_FALSE(kvCache(32, -1, 128, f16));
  EXPECT_TRUE(
      oneDiagnostic("!decode.kv_cache kv_heads must be positive, got -1"));
  EXPECT_FALSE(kvCache(32, 8, 0, f16));
  EXPECT_TRUE(
      oneDiagnostic("!decode.kv_cache head_dim must be positive, got 0"));
  EXPECT_TRUE(kvCache(32, 8, 128, f16));
  EXPECT_TRUE(noDiagnostics());
}

TEST_F(TypesTest, KVCacheGetCheckedRejectsBadElementTypes) {
  EXPECT_FALSE(kvCache(1, 1, 128, IntegerType::get(&ctx, 32)));
  EXPECT_TRUE(oneDiagnostic("!decode.kv_cache element type must be f32, f16, "
                            "bf16 or !decode.int4, got 'i32'"));
  // 3 groups do not divide 128.
  EXPECT_FALSE(kvCache(1, 1, 128, Int4Type::get(&ctx, 3)));
  EXPECT_TRUE(oneDiagnostic("!decode.kv_cache INT4 group count 3 does not "
                            "divide head_dim 128"));
  // Groups of 1 element cannot be packed two nibbles to a byte.
  EXPECT_FALSE(kvCache(1, 1, 4, Int4Type::get(&ctx, 4)));
  EXPECT_TRUE(oneDiagnostic("INT4 group size 1 must be even"));
}

TEST_F(TypesTest, Int4GetCheckedRejectsNonPositiveGroups) {
  EXPECT_FALSE(
      Int4Type::getChecked([this] { return emitError(); }, &ctx, int64_t{0}));
  EXPECT_TRUE(oneDiagnostic("!decode.int4 groups must be positive, got 0"));
  auto int4 =
      Int4Type::getChecked([this] { return emitError(); }, &ctx, int64_t{4});
  ASSERT_TRUE(int4);
  EXPECT_EQ(int4.getGroups(), 4);
  EXPECT_EQ(print(Type(int4)), "!decode.int4<groups = 4>");
}

TEST_F(TypesTest, QuantTensor) {
  Type f16 = Float16Type::get(&ctx);
  auto type = QuantTensorType::getChecked([this] { return emitError(); }, &ctx,
                                          ArrayRef<int64_t>{4096, 4096},
                                          int64_t{128}, f16);
  ASSERT_TRUE(type);
  EXPECT_EQ(print(Type(type)),
            "!decode.qtensor<4096x4096xi4, group_size = 128, scale = f16>");
  EXPECT_EQ(parseType(print(Type(type)), &ctx), Type(type));

  EXPECT_FALSE(QuantTensorType::getChecked([this] { return emitError(); }, &ctx,
                                           ArrayRef<int64_t>{64, 100},
                                           int64_t{32}, f16));
  EXPECT_TRUE(oneDiagnostic("!decode.qtensor group_size 32 does not divide "
                            "K = 100"));
  EXPECT_FALSE(QuantTensorType::getChecked([this] { return emitError(); }, &ctx,
                                           ArrayRef<int64_t>{64}, int64_t{32},
                                           f16));
  EXPECT_TRUE(oneDiagnostic("!decode.qtensor must be 2-D [N, K], got rank 1"));
}

TEST_F(TypesTest, TiledCSL) {
  Type f16 = Float16Type::get(&ctx);
  auto type = TiledCSLType::getChecked([this] { return emitError(); }, &ctx,
                                       ArrayRef<int64_t>{4096, 4096}, f16,
                                       ArrayRef<int64_t>{128, 64});
  ASSERT_TRUE(type);
  EXPECT_EQ(print(Type(type)),
            "!decode.tiled_csl<4096x4096xf16, tile = 128x64>");
  EXPECT_EQ(parseType(print(Type(type)), &ctx), Type(type));

  EXPECT_FALSE(TiledCSLType::getChecked(
      [this] { return emitError(); }, &ctx, ArrayRef<int64_t>{4096, 4096},
      Type(Float32Type::get(&ctx)), ArrayRef<int64_t>{128, 64}));
  EXPECT_TRUE(oneDiagnostic("!decode.tiled_csl element type must be f16 or "
                            "bf16, got 'f32'"));
  EXPECT_FALSE(TiledCSLType::getChecked([this] { return emitError(); }, &ctx,
                                        ArrayRef<int64_t>{4096, 4096}, f16,
                                        ArrayRef<int64_t>{512, 256}));
  EXPECT_TRUE(oneDiagnostic("does not fit 16-bit "
                            "locations"));

  // Partial tiles: a 200x100 weight in 128x64 tiles is 2 x 2 tiles, and its
  // 5 TileOffsets take a header of 8 words.
  auto partial = TiledCSLType::getChecked([this] { return emitError(); }, &ctx,
                                          ArrayRef<int64_t>{200, 100}, f16,
                                          ArrayRef<int64_t>{128, 64});
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial.getTileRows(), 2);
  EXPECT_EQ(partial.getTilesPerRow(), 2);
  EXPECT_EQ(partial.getTileCount(), 4);
  EXPECT_EQ(partial.getHeaderWords(), 8);
  FailureOr<int64_t> bytes = getWeightBytes(partial);
  ASSERT_TRUE(succeeded(bytes));
  EXPECT_EQ(*bytes, 8 * 4 + 4 * 128 * 64 * 4);
}

TEST_F(TypesTest, ParseErrorsReachTheDiagnosticHandler) {
  EXPECT_FALSE(parseType(
      "!decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, i8>", &ctx));
  EXPECT_TRUE(oneDiagnostic("element type must be f32, f16, bf16"));
}

} // namespace
