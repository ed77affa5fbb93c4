//===- Embedding.cpp - kernel family "embedding" --------------------------===//
//
// decode.embedding: a thread per vector of `vector_bytes` of the hidden row
// (blockIdx.y is the sequence), copying the token's table row (the id
// clamped into the vocabulary).
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
int64_t elementBytes(MemRefType type) {
  return type.getElementType().getIntOrFloatBitWidth() / 8;
}

void buildEmbedding(KernelContext &ctx, int64_t threads, int64_t vectorBytes,
                    Buffer table, Buffer tokens, Buffer out) {
  int64_t hidden = table.type.getDimSize(1);
  int64_t lanes = vectorBytes / elementBytes(table.type);
  if (hidden % lanes != 0)
    lanes = 1;
  int64_t perBlock = threads * lanes;
  ctx.launch(
      "embedding",
      {KernelArg::buffer(table), KernelArg::buffer(tokens),
       KernelArg::buffer(out)},
      {ctx.hostIndex((hidden + perBlock - 1) / perBlock),
       ctx.toIndex(ctx.batch), ctx.hostIndex(1)},
      threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value i = e.blockId(Dimension::y);
        Value vectorIndex = e.globalIdX(threads);
        Value j = arith::MulIOp::create(b, vectorIndex, e.index(lanes));
        e.ifThenElse(
            e.cmpi(arith::CmpIPredicate::ult, j, e.index(hidden)), [&] {
              // The runtime checks every token it is given; one it is not
              // (a step launched ahead reads the last step's sampled ids on
              // the device) still never reads outside the table.
              Value token =
                  e.clampIndex(e.loadIndex(v[1], i), table.type.getDimSize(0));
              auto type = VectorType::get({lanes}, table.type.getElementType());
              // Rows are a multiple of the vector long, so
              // a full vector is 16-byte aligned.
              llvm::MaybeAlign align = lanes * elementBytes(table.type) == 16
                                           ? llvm::MaybeAlign(16)
                                           : llvm::MaybeAlign();
              Value row =
                  vector::LoadOp::create(b, type, v[0], ValueRange{token, j},
                                         /*nontemporal=*/false, align);
              vector::StoreOp::create(b, row, v[2], ValueRange{i, j},
                                      /*nontemporal=*/false, align);
            });
      });
}

class EmbeddingFamily : public KernelFamily {
public:
  StringRef getName() const override { return "embedding"; }
  bool canLower(Operation *op) const override {
    return isa<decode::EmbeddingOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(
        op->getContext(),
        {{"threads", 256}, {"vector_bytes", target.vectorBytes()}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    if (failed(checkThreads(op, config, "threads", target)))
      return failure();
    return checkVectorBytes(op, config, "vector_bytes", target,
                            cast<decode::EmbeddingOp>(op).getTable().getType());
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto embedding = cast<decode::EmbeddingOp>(op);
    buildEmbedding(ctx, config.get("threads"), config.get("vector_bytes"),
                   buffers.get(embedding.getTable()),
                   buffers.get(embedding.getTokens()),
                   buffers.result(embedding.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createEmbeddingFamily() {
  return std::make_unique<EmbeddingFamily>();
}
