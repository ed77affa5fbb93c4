//===- DecodeToGPU.cpp - decode.model to GPU kernels + a launching step ---===//
//
// Produces a `gpu.module @fdc_kernels` with one or more kernels per op (built
// by the generators of *Kernels.cpp from their configs) and the host entry
// `fdc_model_step(const FdcStepArgs *)`, which places every intermediate
// value in the scratch buffer and launches the kernels in order with
// gpu.launch_func (lowered to the runtime's launch callback by
// fdc-lower-kernel-launches). The module records the scratch it needs and
// the kernel names for the manifest.
//
//===----------------------------------------------------------------------===//

#include "HostBranches.h"
#include "KernelRegistry.h"
#include "Kernels/TiledCSLWords.h"
#include "LinearTuning.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/MemRefFromPointer.h"
#include "fdc/Conversion/Utils/StepAbi.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc_model_abi.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/SaveAndRestore.h"

namespace fdc {
#define GEN_PASS_DEF_CONVERTDECODETOGPU
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
constexpr int64_t kScratchAlignment = 256;

/// The fields of FdcTuneArgs (fdc_model_abi.h), 8 bytes each.
enum TuneField : int64_t {
  kTuneSignature = offsetof(FdcTuneArgs, signature) / 8,
  kTuneCandidate = offsetof(FdcTuneArgs, candidate) / 8,
  kTuneBatch = offsetof(FdcTuneArgs, batch) / 8,
  kTuneInput = offsetof(FdcTuneArgs, input) / 8,
  kTuneWeight = offsetof(FdcTuneArgs, weight) / 8,
  kTuneBias = offsetof(FdcTuneArgs, bias) / 8,
  kTuneResidual = offsetof(FdcTuneArgs, residual) / 8,
  kTuneOut = offsetof(FdcTuneArgs, out) / 8,
  kTuneWorkspace = offsetof(FdcTuneArgs, workspace) / 8,
  kTuneDevice = offsetof(FdcTuneArgs, device) / 8,
};
static_assert(sizeof(FdcTuneArgs) == 8 * (kTuneDevice + 1),
              "every FdcTuneArgs field is 8 bytes");

/// The kernels of one distinct linear signature: what the manifest's
/// "linears" lists.
struct LinearTable {
  LinearSignature signature;
  Attribute kernels;  // #decode.kernel or #decode.dispatch, complete
  std::string source; // "heuristic", "tuned" or "ir"
  int64_t count = 0;
};

/// A signature whose candidates fdc_tune_launch builds.
struct TuneSignature {
  decode::LinearOp op; // the first op of the signature
  SmallVector<decode::KernelAttr> candidates;
  /// The largest workspace of a candidate, bytes per batch row.
  int64_t workspaceBytesPerRow = 0;
  /// Whether the step's kernels of `op` let the next kernel launch early
  /// (KernelContext::releasesDependents): the candidates are built alike,
  /// so that fdc tune times them as the step runs them.
  bool releasesDependents = false;
};

/// The registered family of `kernel`.
static const KernelFamily *getFamily(decode::KernelAttr kernel) {
  return KernelRegistry::get().lookup(kernel.getFamily().getValue());
}

/// The workspace `kernel` of `op` takes, bytes per batch row.
static int64_t getWorkspaceBytesPerRow(Operation *op, decode::KernelAttr kernel,
                                       const GpuPrimitives &target) {
  return getFamily(kernel)->getWorkspaceBytesPerRow(
      op, KernelConfig(kernel.getConfig()), target);
}

/// An op's resolved kernels as a list: a #decode.kernel, the kernels of a
/// #decode.dispatch, or none for null.
static SmallVector<decode::KernelAttr> getKernelList(Attribute kernels) {
  if (!kernels)
    return {};
  if (auto kernel = dyn_cast<decode::KernelAttr>(kernels))
    return {kernel};
  return cast<decode::KernelDispatchAttr>(kernels).getKernelList();
}

/// The largest workspace of `op`'s kernels (getKernelList), bytes per batch
/// row.
static int64_t getWorkspaceBytesPerRow(Operation *op, Attribute kernels,
                                       const GpuPrimitives &target) {
  int64_t bytes = 0;
  for (decode::KernelAttr kernel : getKernelList(kernels))
    bytes = std::max(bytes, getWorkspaceBytesPerRow(op, kernel, target));
  return bytes;
}

/// Whether one of `kernels` (getKernelList) scatters Tiled-CSL words into
/// shared memory (KernelFamily::scattersTiledCSLWords).
static bool scattersTiledCSLWords(Attribute kernels) {
  return llvm::any_of(getKernelList(kernels), [](decode::KernelAttr kernel) {
    return getFamily(kernel)->scattersTiledCSLWords();
  });
}

class GpuStepLowering : public StepBuffers {
public:
  GpuStepLowering(decode::ModelOp model, ImplicitLocOpBuilder &b,
                  mlir::gpu::GPUModuleOp kernels,
                  const GpuPrimitives &primitives)
      : model(model), b(b), kernels(kernels), primitives(primitives) {}

  LogicalResult run();

  int64_t scratchPerSequence = 0, scratchFixed = 0;
  SmallVector<std::string> kernelNames;
  /// One per signature, kernels and source, in order of first use.
  SmallVector<LinearTable> linearTables;
  llvm::StringMap<size_t> linearTableIndex;
  /// Set to build fdc_tune_launch; filled with what it builds.
  bool buildTuneEntry = false;
  SmallVector<TuneSignature> tuneSignatures;

private:
  Value loadField(int64_t field, Type type);
  // StepBuffers
  Buffer get(Value value) override { return buffers.lookup(value); }
  Buffer result(Value result) override;
  Buffer scratch(MemRefType type, int64_t bytesPerSequence,
                 int64_t fixedBytes) override;
  using StepBuffers::scratch;
  void alias(Value result, Value source) override {
    buffers[result] = get(source);
  }
  Buffer workspace(MemRefType type) override;

  LogicalResult lowerOp(Operation &op, KernelContext &ctx);
  /// Builds `op`'s kernels: `kernels` is its #decode.kernel or
  /// #decode.dispatch.
  LogicalResult lowerKernels(Operation &op, Attribute kernels,
                             KernelContext &ctx);
  /// A tensor-parallel rank's linear whose residual one rank adds
  /// (residual_rank): that rank runs its kernels, the others those of the
  /// same linear less its residual, in two branches on the rank.
  LogicalResult lowerResidualOnOneRank(decode::LinearOp linear,
                                       Attribute kernels, KernelContext &ctx);
  /// Builds one kernel of `op` (a family's build under the kernel key).
  LogicalResult buildKernel(Operation &op, decode::KernelAttr kernel,
                            KernelContext &ctx);
  /// Records the kernels of a decode.linear for the manifest (and, for a
  /// tuning library, its signature's candidates; `releasesDependents` as
  /// the step builds the op's kernels).
  void recordLinear(decode::LinearOp linear, Attribute kernels,
                    Attribute written, bool releasesDependents);
  /// fdc_tune_launch(const FdcTuneArgs *): for the pair (signature,
  /// candidate) it is given, launches that candidate's kernels of the
  /// signature's first op on the buffers it is given.
  LogicalResult lowerTuneEntry(KernelContext &ctx);
  /// The kernels of a #decode.dispatch, each in a block of the step chosen
  /// by the batch.
  /// Their results are placed before the branches; the kernels must take
  /// no other scratch.
  LogicalResult
  lowerDispatch(Operation &op, decode::KernelDispatchAttr dispatch,
                function_ref<LogicalResult(decode::KernelAttr)> build);
  /// Ops that are no kernel: views, weight addresses, index constants.
  LogicalResult lowerStructuralOp(Operation &op);
  decode::ModelOp model;
  ImplicitLocOpBuilder &b;
  mlir::gpu::GPUModuleOp kernels;
  const GpuPrimitives &primitives;
  Value args, batch, scratchBase, scratchOffset;
  DenseMap<Value, Buffer> buffers;
  DenseMap<Value, Value> scalars;
  DenseMap<Value, Buffer> outputs;
  /// Set while the kernels of a dispatch table are built.
  bool inDispatch = false;
  /// The workspace (see StepBuffers::workspace): one scratch region that
  /// every op's kernels share, as large as the largest op's (an op's
  /// workspace is dead once its kernels have run, in stream order), and
  /// its bytes per batch row.
  Value opWorkspace;
  int64_t opWorkspaceBytesPerRow = 0;
  /// Each op's kernels (resolveKernels, once per op; null for an op that
  /// is no kernel).
  DenseMap<Operation *, Attribute> resolvedKernels;
};

Value GpuStepLowering::loadField(int64_t field, Type type) {
  return loadStepField(b, args, field, type);
}

Buffer GpuStepLowering::scratch(MemRefType type, int64_t bytesPerSequence,
                                int64_t fixedBytes) {
  assert(!inDispatch && "a kernel of a dispatch table takes scratch");
  Value pointer = pointerAtByte(b, scratchBase, scratchOffset);
  Value perSequence = arith::MulIOp::create(
      b, batch,
      arith::ConstantIntOp::create(b, b.getI64Type(), bytesPerSequence));
  Value bytes = arith::AddIOp::create(
      b, perSequence,
      arith::ConstantIntOp::create(b, b.getI64Type(), fixedBytes));
  Value align =
      arith::ConstantIntOp::create(b, b.getI64Type(), kScratchAlignment);
  Value aligned = arith::MulIOp::create(
      b, arith::CeilDivSIOp::create(b, bytes, align), align);
  scratchOffset = arith::AddIOp::create(b, scratchOffset, aligned);
  scratchPerSequence += bytesPerSequence;
  scratchFixed += fixedBytes + kScratchAlignment;
  return {pointer, type};
}

Buffer GpuStepLowering::workspace(MemRefType type) {
  int64_t perRow = type.getElementTypeBitWidth() / 8;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!type.isDynamicDim(d))
      perRow *= type.getDimSize(d);
  assert(opWorkspace && perRow <= opWorkspaceBytesPerRow &&
         "a kernel takes more workspace than its family declared");
  (void)perRow;
  return {opWorkspace, type};
}

Buffer GpuStepLowering::result(Value result) {
  if (auto placed = buffers.find(result); placed != buffers.end())
    return placed->second;
  Buffer buffer;
  auto it = outputs.find(result);
  if (it != outputs.end()) {
    buffer = it->second;
  } else {
    MemRefType type = getBufferType(result.getType());
    int64_t perSequence = type.getElementTypeBitWidth() / 8;
    for (int64_t d = 1; d < type.getRank(); ++d)
      perSequence *= type.getDimSize(d);
    buffer = scratch(type, perSequence);
  }
  buffers[result] = buffer;
  return buffer;
}

LogicalResult GpuStepLowering::run() {
  func::FuncOp step = model.getStepFunction();
  Block &body = step.getBody().front();
  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto entry = func::FuncOp::create(b, "fdc_model_step",
                                    FunctionType::get(ctx, {ptrType}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry.addEntryBlock());
  args = entry.getArgument(0);
  Type i64 = b.getI64Type();
  batch = loadField(kStepBatch, i64);
  Value numSlots = loadField(kStepNumSlots, i64);
  Value maxContext = loadField(kStepMaxContext, i64);
  scratchBase = loadField(kStepScratch, ptrType);
  scratchOffset = arith::ConstantIntOp::create(b, i64, 0);

  for (unsigned index = 0; index < 7; ++index)
    buffers[body.getArgument(index)] = {
        loadField(kStepTokens + index, ptrType),
        getBufferType(body.getArgument(index).getType())};
  buffers[body.getArgument(7)] = {loadField(kStepKVCache, ptrType),
                                  getBufferType(body.getArgument(7).getType())};
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  for (auto [operand, field] :
       {std::pair(returnOp.getOperand(0), kStepLogits),
        std::pair(returnOp.getOperand(1), kStepNextTokens)}) {
    if (isa<BlockArgument>(operand))
      return returnOp.emitOpError()
             << "the GPU lowering needs the step's outputs to be computed by "
                "its ops";
    outputs[operand] = {loadField(field, ptrType),
                        getBufferType(operand.getType())};
  }

  // Every op's kernels; then the step's workspace, before any kernel, as
  // large as the largest op's.
  int64_t workspaceBytes = 0;
  bool remarkedBanks = false;
  for (Operation &op : body.without_terminator()) {
    FailureOr<Attribute> opKernels = resolveKernels(&op, primitives);
    if (failed(opKernels))
      return failure();
    resolvedKernels[&op] = *opKernels;
    workspaceBytes = std::max(
        workspaceBytes, getWorkspaceBytesPerRow(&op, *opKernels, primitives));
    // The packed Tiled-CSL word order (a format constant) against the
    // target's banks, said once: a mismatch costs speed, never
    // correctness, so the kernels are built the same and it is no error.
    if (!remarkedBanks && scattersTiledCSLWords(*opKernels) &&
        !TiledCSLWords::keepsOrderBanks(primitives)) {
      remarkedBanks = true;
      op.emitRemark() << "Tiled-CSL words are packed in an order for "
                      << decode::TiledCSLType::kOrderBanks
                      << " shared-memory banks of "
                      << decode::TiledCSLType::kOrderBankBytes
                      << " bytes, the target has "
                      << primitives.sharedMemoryBanks() << " of "
                      << primitives.sharedMemoryBankBytes()
                      << ": kernels that scatter them into shared memory "
                         "(flash_spmm, group_spmm) may meet more bank "
                         "conflicts (slower, not wrong)";
    }
  }
  if (workspaceBytes > 0) {
    auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    opWorkspace = scratch(bytes, workspaceBytes).pointer;
    opWorkspaceBytesPerRow = workspaceBytes;
  }

  KernelContext kernelContext(b, kernels, primitives, batch, numSlots,
                              maxContext);
  kernelContext.stepArgs = args;
  // Which op launches kernels after each (the step's first after its last:
  // the runtime launches steps one after another).
  SmallVector<Operation *> launching;
  for (Operation &op : body.without_terminator())
    if (resolvedKernels.lookup(&op))
      launching.push_back(&op);
  llvm::DenseMap<Operation *, Operation *> nextLaunching;
  for (auto [i, op] : llvm::enumerate(launching))
    nextLaunching[op] = launching[(i + 1) % launching.size()];
  for (Operation &op : body.without_terminator()) {
    Operation *next = nextLaunching.lookup(&op);
    auto linear = dyn_cast_or_null<decode::LinearOp>(next);
    kernelContext.releasesDependents =
        linear && fdc::gpu::isModelWeight(linear.getWeight());
    if (failed(lowerOp(op, kernelContext)))
      return failure();
  }
  kernelContext.releasesDependents = false;
  func::ReturnOp::create(b);
  if (buildTuneEntry) {
    b.setInsertionPointAfter(entry);
    if (failed(lowerTuneEntry(kernelContext)))
      return failure();
  }
  kernelNames = kernelContext.kernelNames;
  return success();
}

/// What the kernels a family builds for `op` with `kernel` depend on: the
/// op's name, attributes (but its decode.kernel), operand and result types,
/// and the kernel. Values (which buffer, which layer's weights) reach the
/// kernels as arguments.
static std::string getKernelKey(Operation &op, decode::KernelAttr kernel) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op.getName() << " " << kernel;
  for (NamedAttribute attr : op.getAttrs())
    if (attr.getName() != decode::KernelAttr::getOpAttrName() &&
        attr.getName() != kKernelSourceAttrName)
      os << " " << attr.getName().getValue() << "=" << attr.getValue();
  for (Type type : op.getOperandTypes())
    os << " " << type;
  os << " ->";
  for (Type type : op.getResultTypes())
    os << " " << type;
  return key;
}

LogicalResult GpuStepLowering::buildKernel(Operation &op,
                                           decode::KernelAttr kernel,
                                           KernelContext &ctx) {
  const KernelFamily *family = getFamily(kernel);
  // What the kernels depend on besides the op's types and attributes: the
  // flag, where the family reads it, and whether a linear's weight is the
  // model's (the group GEMM reads it before its wait).
  std::string key = getKernelKey(op, kernel);
  if (ctx.releasesDependents && family->readsReleasesDependents())
    key += " releases-dependents";
  if (auto linear = dyn_cast<decode::LinearOp>(op))
    if (fdc::gpu::isModelWeight(linear.getWeight()))
      key += " model-weight";
  ctx.setKernelKey(std::move(key));
  LogicalResult built =
      family->build(&op, KernelConfig(kernel.getConfig()), *this, ctx);
  ctx.clearKernelKey();
  return built;
}

void GpuStepLowering::recordLinear(decode::LinearOp linear, Attribute kernels,
                                   Attribute written, bool releasesDependents) {
  std::string source = "heuristic";
  if (auto marked = linear->getAttrOfType<StringAttr>(kKernelSourceAttrName)) {
    source = marked.str();
  } else if (written) {
    // Written in the IR: by hand, or decode-select-kernels's default.
    Operation *probe = linear->clone();
    probe->removeAttr(decode::KernelAttr::getOpAttrName());
    FailureOr<Attribute> heuristic = resolveKernels(probe, primitives);
    probe->destroy();
    if (failed(heuristic) || *heuristic != kernels)
      source = "ir";
  }
  LinearSignature signature = getLinearSignature(linear);
  std::string key;
  llvm::raw_string_ostream os(key);
  os << signature.key() << " " << kernels << " " << source;
  auto [it, inserted] = linearTableIndex.try_emplace(key, linearTables.size());
  if (inserted)
    linearTables.emplace_back();
  LinearTable &table = linearTables[it->second];
  if (table.count++ == 0) {
    table.signature = signature;
    table.kernels = kernels;
    table.source = source;
  }
  if (!buildTuneEntry)
    return;
  for (const TuneSignature &tuned : tuneSignatures)
    if (getLinearSignature(tuned.op) == signature)
      return;
  SmallVector<decode::KernelAttr> candidates =
      getLinearCandidates(linear, primitives);
  // One candidate leaves nothing to choose (no flat GEMM for f32 or INT4).
  if (candidates.size() <= 1)
    return;
  int64_t workspaceBytes = 0;
  for (decode::KernelAttr candidate : candidates)
    workspaceBytes = std::max(
        workspaceBytes, getWorkspaceBytesPerRow(linear, candidate, primitives));
  tuneSignatures.push_back(
      {linear, std::move(candidates), workspaceBytes, releasesDependents});
}

LogicalResult GpuStepLowering::lowerOp(Operation &op, KernelContext &ctx) {
  Attribute written = op.getAttr(decode::KernelAttr::getOpAttrName());
  Attribute kernels = resolvedKernels.lookup(&op);
  if (!kernels)
    return lowerStructuralOp(op);
  if (auto linear = dyn_cast<decode::LinearOp>(op)) {
    recordLinear(linear, kernels, written, ctx.releasesDependents);
    if (linear.getResidualRank() && model.getTensorParallel() > 1)
      return lowerResidualOnOneRank(linear, kernels, ctx);
  }
  return lowerKernels(op, kernels, ctx);
}

LogicalResult GpuStepLowering::lowerKernels(Operation &op, Attribute kernels,
                                            KernelContext &ctx) {
  auto build = [&](decode::KernelAttr kernel) {
    return buildKernel(op, kernel, ctx);
  };
  if (auto kernel = dyn_cast<decode::KernelAttr>(kernels))
    return build(kernel);
  return lowerDispatch(op, cast<decode::KernelDispatchAttr>(kernels), build);
}

LogicalResult GpuStepLowering::lowerResidualOnOneRank(decode::LinearOp linear,
                                                      Attribute kernels,
                                                      KernelContext &ctx) {
  // Both branches write the one result buffer: place it first. The kernels
  // in the branches take no other scratch (it would be placed in one branch
  // and counted in both).
  Buffer out = result(linear.getResult());
  llvm::SaveAndRestore inBranches(inDispatch, true);
  Value rank = loadCollectiveRank(b, args);
  Value adds =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rank,
                            arith::ConstantIntOp::create(
                                b, b.getI64Type(), *linear.getResidualRank()));
  HostBranches branches(b);
  if (failed(branches.when(
          adds, [&] { return lowerKernels(*linear, kernels, ctx); })))
    return failure();
  return branches.otherwise([&]() -> LogicalResult {
    // The linear less its residual stands beside it in the step while its
    // kernels are built (the families read the op), writing the same buffer.
    OpBuilder beside(linear);
    auto product = decode::LinearOp::create(
        beside, linear.getLoc(), linear.getType(), linear.getInput(),
        linear.getWeight(), linear.getBias(), /*residual=*/Value(),
        linear.getActivation(), /*residual_rank=*/IntegerAttr());
    buffers[product.getResult()] = out;
    LogicalResult built = lowerKernels(*product, kernels, ctx);
    buffers.erase(product.getResult());
    product.erase();
    return built;
  });
}

LogicalResult GpuStepLowering::lowerDispatch(
    Operation &op, decode::KernelDispatchAttr dispatch,
    function_ref<LogicalResult(decode::KernelAttr)> build) {
  // The results live in one place whichever kernel runs: place them first.
  for (Value value : op.getResults())
    result(value);
  SmallVector<decode::KernelAttr> kernels = dispatch.getKernelList();
  ArrayRef<int64_t> bounds = dispatch.getMaxBatch().asArrayRef();
  llvm::SaveAndRestore dispatching(inDispatch, true);
  // batch <= bounds[0] ? kernels[0] : batch <= bounds[1] ? ... :
  // kernels.back(), then the rest of the step.
  HostBranches branches(b);
  for (auto [bound, kernel] : llvm::zip(bounds, kernels)) {
    Value fits = arith::CmpIOp::create(
        b, arith::CmpIPredicate::sle, batch,
        arith::ConstantIntOp::create(b, b.getI64Type(), bound));
    if (failed(branches.when(fits,
                             [&, kernel = kernel] { return build(kernel); })))
      return failure();
  }
  return branches.otherwise([&] { return build(kernels.back()); });
}

LogicalResult GpuStepLowering::lowerTuneEntry(KernelContext &ctx) {
  MLIRContext *context = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  Type i64 = b.getI64Type();
  auto entry = func::FuncOp::create(b, "fdc_tune_launch",
                                    FunctionType::get(context, {ptrType}, {}));
  // fdc-lower-kernel-launches reads the FdcDeviceApi from this field.
  entry->setAttr("fdc.device_field", b.getI64IntegerAttr(kTuneDevice));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry.addEntryBlock());
  Value tuneArgs = entry.getArgument(0);
  auto field = [&](int64_t index, Type type) {
    return loadStepField(b, tuneArgs, index, type);
  };
  Value signature = field(kTuneSignature, i64);
  Value candidate = field(kTuneCandidate, i64);
  batch = field(kTuneBatch, i64);
  Value input = field(kTuneInput, ptrType);
  Value weight = field(kTuneWeight, ptrType);
  Value bias = field(kTuneBias, ptrType);
  Value residual = field(kTuneResidual, ptrType);
  Value out = field(kTuneOut, ptrType);
  Value workspacePointer = field(kTuneWorkspace, ptrType);
  // The kernels are the step's (same context: identical kernels are shared);
  // only the host values they are launched with change.
  ctx.batch = batch;
  ctx.numSlots = ctx.hostI64(1);
  ctx.maxContext = ctx.hostI64(1);
  // fdc tune launches a candidate again and again, each launch after the
  // one before; a signature's candidates signal the next launch as the
  // step's kernels of its first op do (TuneSignature::releasesDependents):
  // where another linear follows (q, k; gate-up, which down follows), the
  // next launch starts on its weights early; o_proj and down, which an
  // rms_norm follows, let it launch as their blocks end.
  llvm::SaveAndRestore noScratch(inDispatch, true);

  Block *next = b.getInsertionBlock();
  Block *exit = b.createBlock(&entry.getBody());
  func::ReturnOp::create(b);
  b.setInsertionPointToEnd(next);
  // The candidate `candidate` of signature `signature`, else nothing.
  HostBranches branches(b, exit);
  for (size_t s = 0; s < tuneSignatures.size(); ++s) {
    const TuneSignature &tuned = tuneSignatures[s];
    decode::LinearOp linear = tuned.op;
    auto place = [&](Value value, Value pointer) {
      if (value)
        buffers[value] = {pointer, getBufferType(value.getType())};
    };
    for (auto [c, kernel] : llvm::enumerate(tuned.candidates)) {
      Value isSignature = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, signature,
          arith::ConstantIntOp::create(b, i64, static_cast<int64_t>(s)));
      Value isCandidate = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, candidate,
          arith::ConstantIntOp::create(b, i64, static_cast<int64_t>(c)));
      Value chosen = arith::AndIOp::create(b, isSignature, isCandidate);
      if (failed(branches.when(chosen, [&, kernel = kernel] {
            place(linear.getInput(), input);
            place(linear.getWeight(), weight);
            place(linear.getBias(), bias);
            place(linear.getResidual(), residual);
            place(linear.getResult(), out);
            opWorkspace = workspacePointer;
            opWorkspaceBytesPerRow = tuned.workspaceBytesPerRow;
            ctx.releasesDependents = tuned.releasesDependents;
            return buildKernel(*linear, kernel, ctx);
          })))
        return failure();
    }
  }
  branches.end();
  ctx.releasesDependents = false;
  return success();
}

LogicalResult GpuStepLowering::lowerStructuralOp(Operation &op) {
  auto view = [&](Value result, Value source) {
    buffers[result] = {get(source).pointer, getBufferType(result.getType())};
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        if (!constant.getType().isIndex())
          return constant.emitOpError()
                 << "only index constants are supported by the GPU lowering";
        return success();
      })
      .Case([&](tensor::DimOp) { return success(); })
      .Case([&](tensor::ExpandShapeOp expand) {
        return view(expand.getResult(), expand.getSrc());
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        return view(collapse.getResult(), collapse.getSrc());
      })
      .Case([&](decode::WeightRefOp ref) -> LogicalResult {
        FailureOr<Value> address = weightPointer(b, args, model, ref);
        if (failed(address))
          return failure();
        buffers[ref.getResult()] = {*address, getBufferType(ref.getType())};
        return success();
      })
      .Case([&](decode::AllReduceOp allReduce) -> LogicalResult {
        // One rank, no residual (the all_reduce family lowers the others).
        alias(allReduce.getResult(), allReduce.getInput());
        return success();
      })
      .Case([&](decode::AllGatherOp gather) -> LogicalResult {
        alias(gather.getResult(), gather.getInput());
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitOpError() << "is not supported by the GPU lowering";
      });
}

/// The signature's manifest fields, as attributes.
SmallVector<NamedAttribute> signatureEntries(Builder &b,
                                             const LinearSignature &sig) {
  return {b.getNamedAttr("n", b.getI64IntegerAttr(sig.n)),
          b.getNamedAttr("k", b.getI64IntegerAttr(sig.k)),
          b.getNamedAttr("dtype", b.getStringAttr(sig.dtype)),
          b.getNamedAttr("activation", b.getStringAttr(sig.activation)),
          b.getNamedAttr("bias", b.getBoolAttr(sig.bias)),
          b.getNamedAttr("residual", b.getBoolAttr(sig.residual))};
}

/// `fdc.linear_tables` (every distinct linear's kernels) and, with
/// tuning-candidates, `fdc.tune_signatures`, for the manifest.
void recordTables(ModuleOp module, const GpuStepLowering &lowering) {
  Builder b(module.getContext());
  SmallVector<Attribute> tables;
  for (const LinearTable &table : lowering.linearTables) {
    SmallVector<NamedAttribute> entries = signatureEntries(b, table.signature);
    entries.push_back(
        b.getNamedAttr("count", b.getI64IntegerAttr(table.count)));
    entries.push_back(b.getNamedAttr("source", b.getStringAttr(table.source)));
    entries.push_back(b.getNamedAttr("kernels", table.kernels));
    tables.push_back(b.getDictionaryAttr(entries));
  }
  module->setAttr("fdc.linear_tables", b.getArrayAttr(tables));
  if (!lowering.buildTuneEntry)
    return;
  SmallVector<Attribute> signatures;
  for (const TuneSignature &tuned : lowering.tuneSignatures) {
    decode::LinearOp linear = tuned.op;
    SmallVector<NamedAttribute> entries =
        signatureEntries(b, getLinearSignature(linear));
    auto result = cast<RankedTensorType>(linear.getResult().getType());
    auto input = cast<RankedTensorType>(linear.getInput().getType());
    entries.push_back(b.getNamedAttr(
        "input_dtype",
        b.getStringAttr(decode::getDTypeName(input.getElementType()))));
    entries.push_back(b.getNamedAttr(
        "out_dtype",
        b.getStringAttr(decode::getDTypeName(result.getElementType()))));
    entries.push_back(b.getNamedAttr(
        "out_features", b.getI64IntegerAttr(result.getDimSize(1))));
    entries.push_back(
        b.getNamedAttr("workspace_bytes_per_row",
                       b.getI64IntegerAttr(tuned.workspaceBytesPerRow)));
    SmallVector<Attribute> candidates(tuned.candidates.begin(),
                                      tuned.candidates.end());
    entries.push_back(b.getNamedAttr("candidates", b.getArrayAttr(candidates)));
    signatures.push_back(b.getDictionaryAttr(entries));
  }
  module->setAttr("fdc.tune_signatures", b.getArrayAttr(signatures));
}

struct ConvertDecodeToGPU
    : public fdc::impl::ConvertDecodeToGPUBase<ConvertDecodeToGPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<decode::ModelOp> found =
        getSingleModel(module, "convert-decode-to-gpu");
    if (failed(found))
      return signalPassFailure();
    decode::ModelOp model = *found;
    MLIRContext *ctx = &getContext();
    FailureOr<decode::GpuTargetAttr> gpuTarget =
        resolveGpuTarget(module, target, getArgument());
    if (failed(gpuTarget))
      return signalPassFailure();
    module->setAttr(decode::GpuTargetAttr::getModuleAttrName(), *gpuTarget);
    module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    ImplicitLocOpBuilder b(model.getLoc(), model);
    auto kernels = mlir::gpu::GPUModuleOp::create(b, "fdc_kernels");
    std::unique_ptr<GpuPrimitives> primitives =
        GpuPrimitives::create(*gpuTarget);
    GpuStepLowering lowering(model, b, kernels, *primitives);
    lowering.buildTuneEntry = tuningCandidates;
    if (failed(lowering.run()))
      return signalPassFailure();
    recordTables(module, lowering);
    SmallVector<Attribute> names;
    for (const std::string &name : lowering.kernelNames)
      names.push_back(StringAttr::get(ctx, name));
    module->setAttr("fdc.kernels", ArrayAttr::get(ctx, names));
    module->setAttr("fdc.scratch_bytes_per_sequence",
                    b.getI64IntegerAttr(lowering.scratchPerSequence));
    module->setAttr("fdc.scratch_fixed_bytes",
                    b.getI64IntegerAttr(lowering.scratchFixed));
    model.erase();
  }
};
} // namespace
