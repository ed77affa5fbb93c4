//===- WeightLoader.cpp - Filling the weight arena from a checkpoint ------===//

#include "fdc/runtime/WeightLoader.h"

#include "fdc/runtime/PackedWeights.h"
#include "fdc/runtime/Packing.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

using namespace fdc::runtime;

namespace {

/// Dense weights take their own dtype; int4 weights any float source;
/// tiled_csl weights their element type or f32.
bool acceptsSourceDType(const WeightSpec &weight, DType dtype) {
  switch (weight.layoutKind) {
  case WeightLayout::Dense:
    return dtype == weight.dtype;
  case WeightLayout::Int4:
    return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
  case WeightLayout::TiledCSL:
    return dtype == weight.dtype || dtype == DType::F32;
  }
  return false;
}

std::string expectedSourceDTypes(const WeightSpec &weight) {
  switch (weight.layoutKind) {
  case WeightLayout::Dense:
    break;
  case WeightLayout::Int4:
    return "f32, f16 or bf16 (to pack as int4)";
  case WeightLayout::TiledCSL:
    return concat(manifestDTypeName(weight.dtype),
                  " or f32 (to pack as tiled_csl)");
  }
  return std::string(manifestDTypeName(weight.dtype));
}

/// The checkpoint tensors of `weight`'s sources, checked against it (dtype,
/// shape, rows in all).
Expected<std::vector<CheckpointTensor>>
findSources(const WeightSpec &weight, const Checkpoint &checkpoint) {
  auto fail = [&](const std::string &source, const auto &...args) {
    if (source == weight.name)
      return createError("weight '", weight.name, "': ", args...);
    return createError("weight '", weight.name, "': source '", source,
                       "': ", args...);
  };

  std::vector<CheckpointTensor> tensors;
  int64_t rows = 0;
  for (const std::string &source : weight.sources) {
    std::optional<CheckpointTensor> tensor = checkpoint.lookup(source);
    if (!tensor)
      return fail(source, "checkpoint '", checkpoint.path(),
                  "' has no tensor '", source, "'");
    if (!acceptsSourceDType(weight, tensor->dtype()))
      return fail(source, "checkpoint dtype ",
                  safetensorsDTypeName(tensor->dtype()), ", library expects ",
                  expectedSourceDTypes(weight));
    const std::vector<int64_t> &shape = tensor->shape();
    bool fits;
    if (weight.sources.size() == 1)
      fits = shape == weight.shape;
    else
      fits =
          !shape.empty() && shape.size() == weight.shape.size() &&
          std::equal(shape.begin() + 1, shape.end(), weight.shape.begin() + 1);
    if (!fits)
      return fail(source, "checkpoint shape ", formatShape(shape),
                  " does not fit library shape ", formatShape(weight.shape),
                  weight.sources.size() > 1 ? " (concatenated along dim 0)"
                                            : "");
    if (!shape.empty())
      rows += shape[0];
    tensors.push_back(*tensor);
  }
  if (weight.sources.size() > 1 && rows != weight.shape[0])
    return createError("weight '", weight.name, "': its ",
                       weight.sources.size(), " sources have ", rows,
                       " rows in all, the library expects ", weight.shape[0]);
  return tensors;
}

/// Copies the sources of dense `weight` into `arena`.
Error loadDenseWeight(const WeightSpec &weight, const Checkpoint &checkpoint,
                      uint8_t *arena) {
  Expected<std::vector<CheckpointTensor>> tensors =
      findSources(weight, checkpoint);
  if (!tensors)
    return tensors.takeError();
  uint64_t copied = 0;
  for (const CheckpointTensor &tensor : *tensors) {
    if (tensor.byteSize() > weight.bytes - copied)
      return createError("weight '", weight.name,
                         "': sources hold more bytes than the library's ",
                         weight.bytes);
    std::memcpy(arena + weight.offset + copied, tensor.data, tensor.byteSize());
    copied += tensor.byteSize();
  }
  if (copied != weight.bytes)
    return createError("weight '", weight.name, "': sources hold ", copied,
                       " bytes, the library expects ", weight.bytes);
  return Error::success();
}

/// Fills packed-layout `weight`'s range of `arena`: from the packed-weights
/// file when there is one, else packed from the checkpoint.
Error loadPackedWeight(const WeightSpec &weight, const Checkpoint &checkpoint,
                       const PackedWeights *packed, uint8_t *arena) {
  if (packed)
    return packed->load(weight, arena + weight.offset);
  Expected<std::vector<float>> dense = loadPackSource(weight, checkpoint);
  if (!dense)
    return dense.takeError();
  return packWeight(weight, dense->data(), arena + weight.offset);
}

/// Copies rank `rank`'s pieces of a sliced weight into `arena` (the manifest
/// checked that they stack to the weight's shape).
Error loadSlices(const WeightSpec &weight, const Checkpoint &checkpoint,
                 int64_t rank, uint8_t *arena) {
  const std::vector<WeightPiece> &pieces =
      weight.slices[static_cast<size_t>(rank)];
  uint64_t elementBytes = dtypeSize(weight.dtype);
  uint64_t rowBytes = static_cast<uint64_t>(weight.shape[1]) * elementBytes;
  uint8_t *out = arena + weight.offset;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const WeightPiece &piece = pieces[p];
    auto fail = [&](const auto &...args) {
      return createError("weight '", weight.name, "': rank ", rank, " piece ",
                         p, ": ", args...);
    };
    std::optional<CheckpointTensor> tensor = checkpoint.lookup(piece.source);
    if (!tensor)
      return fail("checkpoint '", checkpoint.path(), "' has no tensor '",
                  piece.source, "'");
    if (tensor->dtype() != weight.dtype)
      return fail("source '", piece.source, "' has checkpoint dtype ",
                  safetensorsDTypeName(tensor->dtype()), ", library expects ",
                  manifestDTypeName(weight.dtype));
    const std::vector<int64_t> &shape = tensor->shape();
    if (shape.size() != 2)
      return fail("source '", piece.source, "' of shape ", formatShape(shape),
                  " is not 2-D");
    if (!piece.sourceShape.empty() && shape != piece.sourceShape)
      return fail("source '", piece.source, "' has checkpoint shape ",
                  formatShape(shape), ", the library was compiled for ",
                  formatShape(piece.sourceShape));
    if (piece.rowEnd > shape[0])
      return fail("rows [", piece.rowBegin, ", ", piece.rowEnd,
                  ") lie outside source '", piece.source, "' of shape ",
                  formatShape(shape));
    if (piece.colEnd > shape[1])
      return fail("cols [", piece.colBegin, ", ", piece.colEnd,
                  ") lie outside source '", piece.source, "' of shape ",
                  formatShape(shape));
    uint64_t sourceRowBytes = static_cast<uint64_t>(shape[1]) * elementBytes;
    const uint8_t *in = tensor->data +
                        static_cast<uint64_t>(piece.rowBegin) * sourceRowBytes +
                        static_cast<uint64_t>(piece.colBegin) * elementBytes;
    int64_t rows = piece.rowEnd - piece.rowBegin;
    if (sourceRowBytes == rowBytes) {
      // Whole rows: one copy.
      std::memcpy(out, in, static_cast<uint64_t>(rows) * rowBytes);
      out += static_cast<uint64_t>(rows) * rowBytes;
      continue;
    }
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(out, in, rowBytes);
      out += rowBytes;
      in += sourceRowBytes;
    }
  }
  return Error::success();
}

/// The most threads that pack weights at once. Each holds its weight's
/// sources as f32 (up to 360 MB for a 7B model's gate/up weight).
constexpr size_t kMaxPackThreads = 8;

/// Fills the int4 and tiled_csl weights `weights` of `arena`
/// (loadPackedWeight). Packing, they are independent and CPU-bound: up to
/// kMaxPackThreads threads take them in turn (each writes only its weight's
/// range, so the arena is the same for any count); once one fails, no
/// weight after it is started. Copying from a packed-weights file, one
/// thread. Returns the error of the first weight (in manifest order) that
/// failed.
Error loadPackedWeights(const std::vector<const WeightSpec *> &weights,
                        const Checkpoint &checkpoint,
                        const PackedWeights *packed, uint8_t *arena) {
  std::vector<Error> errors(weights.size(), Error::success());
  std::atomic<size_t> next{0};
  std::atomic<size_t> firstFailed{weights.size()};
  auto work = [&] {
    for (size_t i = next++; i < firstFailed.load(); i = next++) {
      Error err = Error::success();
      try {
        err = loadPackedWeight(*weights[i], checkpoint, packed, arena);
      } catch (const std::exception &e) {
        err = createError("weight '", weights[i]->name,
                          "': cannot pack it: ", e.what());
      }
      if (!err)
        continue;
      errors[i] = std::move(err);
      size_t failed = firstFailed.load();
      while (i < failed && !firstFailed.compare_exchange_weak(failed, i)) {
      }
    }
  };
  size_t threads =
      packed ? 1
             : std::min(
                   {weights.size(), kMaxPackThreads,
                    std::max<size_t>(1, std::thread::hardware_concurrency())});
  std::vector<std::thread> helpers;
  helpers.reserve(threads);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error &) {
      break; // pack on the threads there are
    }
  }
  work();
  for (std::thread &helper : helpers)
    helper.join();
  for (Error &err : errors)
    if (err)
      return std::move(err);
  return Error::success();
}

} // namespace

Expected<std::vector<float>>
fdc::runtime::loadPackSource(const WeightSpec &weight,
                             const Checkpoint &checkpoint) {
  Expected<std::vector<CheckpointTensor>> tensors =
      findSources(weight, checkpoint);
  if (!tensors)
    return tensors.takeError();
  uint64_t elements = 0;
  for (const CheckpointTensor &tensor : *tensors)
    elements += tensor.byteSize() / dtypeSize(tensor.dtype());
  uint64_t expected = static_cast<uint64_t>(weight.shape[0]) *
                      static_cast<uint64_t>(weight.shape[1]);
  if (elements != expected)
    return createError("weight '", weight.name, "': sources hold ", elements,
                       " elements, the library expects ", expected);
  std::vector<float> dense;
  try {
    dense.resize(elements);
  } catch (const std::bad_alloc &) {
    return createError("weight '", weight.name, "': cannot allocate ",
                       elements * 4, " bytes to pack it");
  }
  uint64_t filled = 0;
  for (const CheckpointTensor &tensor : *tensors) {
    uint64_t count = tensor.byteSize() / dtypeSize(tensor.dtype());
    convertToF32(tensor.data, tensor.dtype(), count, dense.data() + filled);
    filled += count;
  }
  return dense;
}

Expected<HostBuffer> fdc::runtime::loadWeights(const Manifest &manifest,
                                               const Checkpoint &checkpoint,
                                               int64_t rank,
                                               const PackedWeights *packed) {
  if (rank < 0 || rank >= manifest.tensorParallel)
    return createError("cannot load the weights of tensor-parallel rank ", rank,
                       ": the library has ", manifest.tensorParallel,
                       manifest.tensorParallel == 1 ? " rank" : " ranks");
  Expected<HostBuffer> arena =
      HostBuffer::allocate(manifest.weightsBytes, "weight arena");
  if (!arena)
    return arena.takeError();
  if (packed)
    if (Error err = packed->checkMatches(manifest))
      return err;
  std::vector<const WeightSpec *> packedLayouts;
  for (const WeightSpec &weight : manifest.weights) {
    Error err = Error::success();
    if (!weight.slices.empty())
      err = loadSlices(weight, checkpoint, rank, arena->data());
    else if (weight.layoutKind == WeightLayout::Dense)
      err = loadDenseWeight(weight, checkpoint, arena->data());
    else
      packedLayouts.push_back(&weight);
    if (err)
      return err;
  }
  if (Error err =
          loadPackedWeights(packedLayouts, checkpoint, packed, arena->data()))
    return err;
  return arena;
}
