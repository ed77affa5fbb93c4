//===- ApplyTuning.cpp - decode-apply-tuning ------------------------------===//
//
// Sets the measured dispatch tables of a tuning file (written by fdc tune)
// on the decode.linear ops whose signature it lists; see the pass
// description in Passes.td and the file format in docs/cli.md. The file is
// untrusted input: every field is type- and range-checked, and errors name
// the file and the entry.
//
//===----------------------------------------------------------------------===//

#include "KernelRegistry.h"
#include "LinearTuning.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/StepAbi.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace fdc {
#define GEN_PASS_DEF_APPLYTUNING
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
constexpr int64_t kTuningFileVersion = 1;
/// Larger files are refused before parsing.
constexpr uint64_t kMaxTuningFileBytes = 64 << 20;
/// Bounds of a table: no step has more sequences.
constexpr int64_t kMaxBatchBound = int64_t(1) << 31;

/// Deeper JSON is refused before parsing (llvm::json::parse recurses).
constexpr int kMaxNesting = 32;

/// The deepest nesting of arrays and objects in `text` (outside strings).
int getNesting(StringRef text) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

struct TunedKernel {
  std::string family;
  SmallVector<std::pair<std::string, int64_t>> config;
};

struct TunedTable {
  std::string path; // "signatures[2]", for errors
  SmallVector<int64_t> maxBatch;
  SmallVector<TunedKernel> kernels;
};

/// Reads the file's fields; `fail` reports "tuning file 'F': <where>: <what>".
class TuningFileReader {
public:
  TuningFileReader(StringRef file, function_ref<InFlightDiagnostic()> emit)
      : file(file), emit(emit) {}

  LogicalResult read(const llvm::json::Value &root);

  std::string arch;
  llvm::StringMap<TunedTable> tables; // by LinearSignature::key()

private:
  InFlightDiagnostic fail(const Twine &where) {
    return emit() << "tuning file '" << file << "': " << where << ": ";
  }
  LogicalResult readInt(const llvm::json::Object &object, StringRef key,
                        const Twine &where, int64_t lo, int64_t hi,
                        int64_t &out);
  LogicalResult readString(const llvm::json::Object &object, StringRef key,
                           const Twine &where, std::string &out);
  LogicalResult readBool(const llvm::json::Object &object, StringRef key,
                         const Twine &where, bool &out);
  LogicalResult readSignature(const llvm::json::Value &value,
                              const std::string &where);
  LogicalResult readKernel(const llvm::json::Value &value,
                           const std::string &where, TunedKernel &out);

  StringRef file;
  function_ref<InFlightDiagnostic()> emit;
};

LogicalResult TuningFileReader::readInt(const llvm::json::Object &object,
                                        StringRef key, const Twine &where,
                                        int64_t lo, int64_t hi, int64_t &out) {
  const llvm::json::Value *value = object.get(key);
  std::optional<int64_t> integer = value ? value->getAsInteger() : std::nullopt;
  if (!integer || *integer < lo || *integer > hi)
    return fail(where) << "'" << key << "' must be an integer in [" << lo
                       << ", " << hi << "]";
  out = *integer;
  return success();
}

LogicalResult TuningFileReader::readString(const llvm::json::Object &object,
                                           StringRef key, const Twine &where,
                                           std::string &out) {
  const llvm::json::Value *value = object.get(key);
  std::optional<StringRef> text = value ? value->getAsString() : std::nullopt;
  if (!text)
    return fail(where) << "'" << key << "' must be a string";
  out = text->str();
  return success();
}

LogicalResult TuningFileReader::readBool(const llvm::json::Object &object,
                                         StringRef key, const Twine &where,
                                         bool &out) {
  const llvm::json::Value *value = object.get(key);
  std::optional<bool> flag = value ? value->getAsBoolean() : std::nullopt;
  if (!flag)
    return fail(where) << "'" << key << "' must be true or false";
  out = *flag;
  return success();
}

LogicalResult TuningFileReader::readKernel(const llvm::json::Value &value,
                                           const std::string &where,
                                           TunedKernel &out) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return fail(where)
           << "must be an object {\"family\": ..., \"config\": {...}}";
  if (failed(readString(*object, "family", where, out.family)))
    return failure();
  const KernelRegistry &registry = KernelRegistry::get();
  if (!registry.lookup(out.family))
    return fail(where) << "unknown kernel family '" << out.family
                       << "'; known families: "
                       << llvm::join(registry.getFamilyNames(), ", ");
  const llvm::json::Value *config = object->get("config");
  const llvm::json::Object *entries = config ? config->getAsObject() : nullptr;
  if (!entries)
    return fail(where) << "'config' must be an object of integers";
  for (const auto &[name, entry] : *entries) {
    std::optional<int64_t> integer = entry.getAsInteger();
    if (!integer)
      return fail(where) << "config entry '" << name.str()
                         << "' must be an integer";
    out.config.push_back({name.str(), *integer});
  }
  // llvm::json::Object is unordered: a canonical order for the attribute.
  llvm::sort(out.config);
  return success();
}

LogicalResult TuningFileReader::readSignature(const llvm::json::Value &value,
                                              const std::string &where) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return fail(where) << "must be an object";
  LinearSignature signature;
  if (failed(readInt(*object, "n", where, 1, INT32_MAX, signature.n)) ||
      failed(readInt(*object, "k", where, 1, INT32_MAX, signature.k)) ||
      failed(readString(*object, "dtype", where, signature.dtype)) ||
      failed(readString(*object, "activation", where, signature.activation)) ||
      failed(readBool(*object, "bias", where, signature.bias)) ||
      failed(readBool(*object, "residual", where, signature.residual)))
    return failure();
  if (!llvm::is_contained({"f32", "f16", "bf16", "int4"}, signature.dtype))
    return fail(where) << "unknown dtype '" << signature.dtype
                       << "' (f32, f16, bf16 or int4)";
  if (!decode::symbolizeActivation(signature.activation))
    return fail(where) << "unknown activation '" << signature.activation
                       << "' (none or silu_gate_up)";

  const llvm::json::Value *dispatchValue = object->get("dispatch");
  const llvm::json::Object *dispatch =
      dispatchValue ? dispatchValue->getAsObject() : nullptr;
  if (!dispatch)
    return fail(where) << "'dispatch' must be an object {\"max_batch\": [...], "
                          "\"kernels\": [...]}";
  TunedTable table;
  table.path = where;
  const llvm::json::Value *boundsValue = dispatch->get("max_batch");
  const llvm::json::Array *bounds =
      boundsValue ? boundsValue->getAsArray() : nullptr;
  const llvm::json::Value *kernelsValue = dispatch->get("kernels");
  const llvm::json::Array *kernels =
      kernelsValue ? kernelsValue->getAsArray() : nullptr;
  if (!bounds || !kernels)
    return fail(where + ".dispatch")
           << "'max_batch' and 'kernels' must be arrays";
  for (auto [index, bound] : llvm::enumerate(*bounds)) {
    std::optional<int64_t> integer = bound.getAsInteger();
    int64_t previous = table.maxBatch.empty() ? 0 : table.maxBatch.back();
    if (!integer || *integer <= previous || *integer > kMaxBatchBound)
      return fail(where + ".dispatch.max_batch[" + Twine(index) + "]")
             << "bounds must be increasing integers in [1, " << kMaxBatchBound
             << "]";
    table.maxBatch.push_back(*integer);
  }
  if (kernels->size() != bounds->size() + 1)
    return fail(where + ".dispatch")
           << "needs one kernel more than max_batch bounds (the last runs "
              "above them), got "
           << kernels->size() << " kernels for " << bounds->size() << " bounds";
  for (auto [index, kernel] : llvm::enumerate(*kernels)) {
    TunedKernel parsed;
    if (failed(readKernel(
            kernel, where + ".dispatch.kernels[" + std::to_string(index) + "]",
            parsed)))
      return failure();
    table.kernels.push_back(std::move(parsed));
  }
  auto [it, inserted] = tables.try_emplace(signature.key(), std::move(table));
  if (!inserted)
    return fail(where) << "signature (" << signature.key()
                       << ") is listed twice, first as " << it->second.path;
  return success();
}

LogicalResult TuningFileReader::read(const llvm::json::Value &root) {
  const llvm::json::Object *object = root.getAsObject();
  if (!object)
    return fail("the file") << "must be a JSON object";
  int64_t version = 0;
  if (failed(readInt(*object, "fdc_tuning_version", "the file", 0, INT32_MAX,
                     version)))
    return failure();
  if (version != kTuningFileVersion)
    return fail("the file") << "fdc_tuning_version " << version
                            << " is not supported (this compiler reads "
                            << kTuningFileVersion << ")";
  if (failed(readString(*object, "arch", "the file", arch)))
    return failure();
  const llvm::json::Value *signaturesValue = object->get("signatures");
  const llvm::json::Array *signatures =
      signaturesValue ? signaturesValue->getAsArray() : nullptr;
  if (!signatures)
    return fail("the file") << "'signatures' must be an array";
  for (auto [index, signature] : llvm::enumerate(*signatures))
    if (failed(readSignature(signature,
                             "signatures[" + std::to_string(index) + "]")))
      return failure();
  return success();
}

struct ApplyTuning : public fdc::impl::ApplyTuningBase<ApplyTuning> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto emit = [&] { return mlir::emitError(module.getLoc()); };
    if (file.empty()) {
      emit() << getArgument() << " needs a tuning file (file=...)";
      return signalPassFailure();
    }
    FailureOr<decode::ModelOp> model = getSingleModel(module, getArgument());
    if (failed(model))
      return signalPassFailure();
    FailureOr<decode::GpuTargetAttr> gpuTarget =
        resolveGpuTarget(module, target, getArgument());
    if (failed(gpuTarget))
      return signalPassFailure();
    module->setAttr(decode::GpuTargetAttr::getModuleAttrName(), *gpuTarget);

    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
    if (!buffer) {
      emit() << "cannot read tuning file '" << file
             << "': " << buffer.getError().message();
      return signalPassFailure();
    }
    if ((*buffer)->getBufferSize() > kMaxTuningFileBytes) {
      emit() << "tuning file '" << file << "' is larger than "
             << (kMaxTuningFileBytes >> 20) << " MiB";
      return signalPassFailure();
    }
    if (getNesting((*buffer)->getBuffer()) > kMaxNesting) {
      emit() << "tuning file '" << file << "' nests arrays and objects "
             << "deeper than " << kMaxNesting << " levels";
      return signalPassFailure();
    }
    llvm::Expected<llvm::json::Value> root =
        llvm::json::parse((*buffer)->getBuffer());
    if (!root) {
      emit() << "tuning file '" << file
             << "' is not valid JSON: " << llvm::toString(root.takeError());
      return signalPassFailure();
    }
    TuningFileReader reader(file, emit);
    if (failed(reader.read(*root)))
      return signalPassFailure();
    // A table measured on one GPU says nothing about another: refused.
    StringRef arch = gpuTarget->getArch().getValue();
    if (reader.arch != arch && reader.arch + "a" != arch) {
      emit() << "tuning file '" << file << "' was measured on " << reader.arch
             << ", but the kernels are generated for " << arch
             << "; tune on an " << arch << " GPU";
      return signalPassFailure();
    }

    std::unique_ptr<GpuPrimitives> primitives =
        GpuPrimitives::create(*gpuTarget);
    MLIRContext *context = &getContext();
    Builder b(context);
    Block &body = model->getStepFunction().getBody().front();
    for (auto linear : body.getOps<decode::LinearOp>()) {
      if (linear->hasAttr(decode::KernelAttr::getOpAttrName()))
        continue;
      auto found = reader.tables.find(getLinearSignature(linear).key());
      if (found == reader.tables.end())
        continue;
      const TunedTable &table = found->second;
      SmallVector<Attribute> kernels;
      for (auto [index, tuned] : llvm::enumerate(table.kernels)) {
        SmallVector<NamedAttribute> entries;
        for (const auto &[name, value] : tuned.config)
          entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
        auto kernel =
            decode::KernelAttr::get(context, b.getStringAttr(tuned.family),
                                    b.getDictionaryAttr(entries));
        // The family's message, prefixed by the file and the entry.
        std::string message;
        FailureOr<decode::KernelAttr> complete;
        {
          ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
            if (diag.getSeverity() == DiagnosticSeverity::Error &&
                message.empty())
              message = diag.str();
            return success();
          });
          complete = completeKernel(linear, kernel, *primitives);
        }
        if (failed(complete)) {
          linear.emitOpError()
              << "tuning file '" << file << "': " << table.path
              << ".dispatch.kernels[" << index << "]: " << message;
          return signalPassFailure();
        }
        kernels.push_back(*complete);
      }
      linear->setAttr(decode::KernelAttr::getOpAttrName(),
                      decode::KernelDispatchAttr::get(
                          context, b.getDenseI64ArrayAttr(table.maxBatch),
                          b.getArrayAttr(kernels)));
      linear->setAttr(kKernelSourceAttrName, b.getStringAttr("tuned"));
    }
  }
};
} // namespace
