//===- DecodeAttrs.cpp - decode dialect attributes ------------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/DialectImplementation.h"

#include <cmath>

using namespace mlir;
using namespace fdc::decode;

// #decode.softmax<online>
// #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>
Attribute SoftmaxAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<SoftmaxScheme> scheme = symbolizeSoftmaxScheme(keyword);
  if (!scheme) {
    parser.emitError(parser.getCurrentLocation())
        << "unknown softmax scheme '" << keyword
        << "'; expected 'online' or 'unified_max'";
    return {};
  }
  FloatAttr phi, lo, hi;
  if (*scheme == SoftmaxScheme::unified_max) {
    Type f32 = parser.getBuilder().getF32Type();
    auto parseField = [&](StringRef name, FloatAttr &value) {
      double number;
      if (parser.parseComma() || parser.parseKeyword(name) ||
          parser.parseEqual() || parser.parseFloat(number))
        return failure();
      value = FloatAttr::get(f32, number);
      return success();
    };
    if (failed(parseField("phi", phi)) || failed(parseField("lo", lo)) ||
        failed(parseField("hi", hi)))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), *scheme, phi, lo, hi);
}

void SoftmaxAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifySoftmaxScheme(getScheme());
  if (getScheme() == SoftmaxScheme::unified_max) {
    printer << ", phi = ";
    printer.printFloat(getPhi().getValue());
    printer << ", lo = ";
    printer.printFloat(getLo().getValue());
    printer << ", hi = ";
    printer.printFloat(getHi().getValue());
  }
  printer << ">";
}

LogicalResult SoftmaxAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  SoftmaxScheme scheme, FloatAttr phi,
                                  FloatAttr lo, FloatAttr hi) {
  if (scheme == SoftmaxScheme::online) {
    if (phi || lo || hi)
      return emitError() << "#decode.softmax<online> takes no phi/lo/hi";
    return success();
  }
  if (!phi || !lo || !hi)
    return emitError() << "#decode.softmax<unified_max> needs phi, lo and hi";
  const std::pair<StringRef, FloatAttr> fields[] = {
      {"phi", phi}, {"lo", lo}, {"hi", hi}};
  for (auto [name, value] : fields) {
    if (!std::isfinite(value.getValueAsDouble()))
      return emitError() << "#decode.softmax<unified_max> " << name
                         << " must be finite, got "
                         << formatFloat(value.getValueAsDouble());
  }
  double l = lo.getValueAsDouble(), h = hi.getValueAsDouble();
  if (!(l < h))
    return emitError()
           << "#decode.softmax<unified_max> needs lo < hi, got lo = "
           << formatFloat(l) << ", hi = " << formatFloat(h);
  if (h > 88.0)
    return emitError() << "#decode.softmax<unified_max> hi = " << formatFloat(h)
                       << " overflows exp() in f32 (must be <= 88)";
  return success();
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t dim, int64_t ranks,
                                DenseI64ArrayAttr sourceRows) {
  if (dim != 0 && dim != 1)
    return emitError() << "#decode.shard dim must be 0 or 1, got " << dim;
  if (ranks < 2 || ranks > 64)
    return emitError() << "#decode.shard ranks must be in [2, 64], got "
                       << ranks;
  if (!sourceRows || sourceRows.empty())
    return emitError() << "#decode.shard needs source_rows";
  for (int64_t rows : sourceRows.asArrayRef()) {
    if (rows < 1)
      return emitError() << "#decode.shard source_rows must be positive, got "
                         << rows;
    if (dim == 0 && rows % ranks != 0)
      return emitError() << "#decode.shard: a source of " << rows
                         << " rows does not split into " << ranks
                         << " equal parts";
  }
  return success();
}

LogicalResult
KernelDispatchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           DenseI64ArrayAttr maxBatch, ArrayAttr kernels) {
  if (!maxBatch || !kernels)
    return emitError() << "#decode.dispatch needs max_batch and kernels";
  for (Attribute kernel : kernels)
    if (!isa<KernelAttr>(kernel))
      return emitError() << "#decode.dispatch kernels must be #decode.kernel "
                            "attributes, got "
                         << kernel;
  ArrayRef<int64_t> bounds = maxBatch.asArrayRef();
  if (kernels.size() != bounds.size() + 1)
    return emitError() << "#decode.dispatch needs one kernel more than "
                          "max_batch bounds (the last runs above them), got "
                       << kernels.size() << " kernels for " << bounds.size()
                       << " bounds";
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (bounds[i] >= 1 && (i == 0 || bounds[i] > bounds[i - 1]))
      continue;
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(bounds, os);
    return emitError() << "#decode.dispatch max_batch must be increasing and "
                          "at least 1, got ["
                       << text << "]";
  }
  return success();
}

SmallVector<KernelAttr> KernelDispatchAttr::getKernelList() const {
  return llvm::map_to_vector(
      getKernels(), [](Attribute kernel) { return cast<KernelAttr>(kernel); });
}
