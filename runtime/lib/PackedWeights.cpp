//===- PackedWeights.cpp - Weights packed once by fdc pack ----------------===//

#include "fdc/runtime/PackedWeights.h"

#include "fdc/runtime/Json.h"
#include "fdc/runtime/Packing.h"
#include "fdc/runtime/WeightLoader.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fdc::runtime;

namespace {

constexpr const char *kFormat = "fdc-packed-weights";

bool isPacked(const WeightSpec &weight) {
  return weight.layoutKind != WeightLayout::Dense && weight.slices.empty();
}

std::string formatStrings(const std::vector<std::string> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + json::quote(values[i]);
  return text + "]";
}

/// The description as the JSON object the metadata holds.
std::string descriptionJson(const PackedWeightDescription &description) {
  std::string text =
      concat("{\"layout\": \"", weightLayoutName(description.layout),
             "\", \"shape\": ", formatShape(description.shape),
             ", \"sources\": ", formatStrings(description.sources));
  if (description.layout == WeightLayout::TiledCSL)
    text += concat(", \"dtype\": \"", manifestDTypeName(description.dtype),
                   "\", \"tile\": [", description.tileRows, ", ",
                   description.tileCols,
                   "], \"csl_version\": ", description.cslVersion);
  else
    text += concat(", \"group_size\": ", description.groupSize,
                   ", \"scale_dtype\": \"",
                   manifestDTypeName(description.scaleDType), "\"");
  return text + "}";
}

/// Reads one weight's description; messages name the field, the caller the
/// file and weight.
Expected<PackedWeightDescription> parseDescription(const json::Value &value) {
  const json::Object *object = value.getObject();
  if (!object)
    return createError("its description is not a JSON object");
  PackedWeightDescription description;
  const std::string *layout =
      value.get("layout") ? value.get("layout")->getString() : nullptr;
  if (!layout || (*layout != "int4" && *layout != "tiled_csl"))
    return createError("\"layout\" must be \"int4\" or \"tiled_csl\"");
  description.layout =
      *layout == "int4" ? WeightLayout::Int4 : WeightLayout::TiledCSL;
  bool tiled = description.layout == WeightLayout::TiledCSL;

  auto integer = [&](const char *key, int64_t &out) -> Error {
    const json::Value *member = value.get(key);
    std::optional<int64_t> parsed = member ? member->getInt64() : std::nullopt;
    if (!parsed || *parsed <= 0)
      return createError("\"", key, "\" must be a positive integer");
    out = *parsed;
    return Error::success();
  };
  auto integers = [&](const char *key, std::vector<int64_t> &out) -> Error {
    const json::Value *member = value.get(key);
    const json::Array *array = member ? member->getArray() : nullptr;
    if (!array || array->size() != 2)
      return createError("\"", key, "\" must be an array of 2 integers");
    for (const json::Value &entry : *array) {
      std::optional<int64_t> parsed = entry.getInt64();
      if (!parsed || *parsed <= 0)
        return createError("\"", key, "\" must hold positive integers");
      out.push_back(*parsed);
    }
    return Error::success();
  };
  auto dtype = [&](const char *key, DType &out) -> Error {
    const json::Value *member = value.get(key);
    const std::string *name = member ? member->getString() : nullptr;
    std::optional<DType> parsed =
        name ? parseManifestDType(*name) : std::nullopt;
    if (!parsed)
      return createError("\"", key, "\" must be a dtype name");
    out = *parsed;
    return Error::success();
  };

  for (const auto &member : *object) {
    static const char *common[] = {"layout", "shape", "sources"};
    static const char *tiledFields[] = {"dtype", "tile", "csl_version"};
    static const char *int4Fields[] = {"group_size", "scale_dtype"};
    bool known = false;
    for (const char *field : common)
      known |= member.first == field;
    for (const char *field : tiledFields)
      known |= tiled && member.first == field;
    for (const char *field : int4Fields)
      known |= !tiled && member.first == field;
    if (!known)
      return createError("unknown field '", member.first, "' for layout ",
                         *layout);
  }
  if (Error err = integers("shape", description.shape))
    return err;
  const json::Value *sources = value.get("sources");
  const json::Array *sourceArray = sources ? sources->getArray() : nullptr;
  if (!sourceArray || sourceArray->empty())
    return createError("\"sources\" must be a non-empty array of names");
  for (const json::Value &source : *sourceArray) {
    if (!source.getString())
      return createError("\"sources\" must hold names");
    description.sources.push_back(*source.getString());
  }
  if (tiled) {
    std::vector<int64_t> tile;
    if (Error err = dtype("dtype", description.dtype))
      return err;
    if (Error err = integers("tile", tile))
      return err;
    description.tileRows = tile[0];
    description.tileCols = tile[1];
    if (Error err = integer("csl_version", description.cslVersion))
      return err;
    return description;
  }
  if (Error err = integer("group_size", description.groupSize))
    return err;
  if (Error err = dtype("scale_dtype", description.scaleDType))
    return err;
  return description;
}

/// The packed bytes of `weight` at `packed` (weight.bytes bytes): all of an
/// int4 weight's, a tiled_csl weight's header and runs.
uint64_t packedBytesUsed(const WeightSpec &weight, const uint8_t *packed) {
  if (weight.layoutKind != WeightLayout::TiledCSL)
    return weight.bytes;
  return tiledCSLPackedBytes(packed, weight.shape[0], weight.shape[1],
                             weight.tileRows, weight.tileCols);
}

/// The safetensors header of the packed weights `weights` of `sizes` bytes,
/// padded with spaces to `length` bytes when `length` is not 0.
std::string headerText(const std::vector<const WeightSpec *> &weights,
                       const std::vector<uint64_t> &sizes) {
  std::string descriptions = "{";
  for (size_t i = 0; i < weights.size(); ++i)
    descriptions += concat(i ? ", " : "", json::quote(weights[i]->name), ": ",
                           descriptionJson(describePackedWeight(*weights[i])));
  descriptions += "}";
  std::string text =
      concat("{\"__metadata__\": {\"format\": \"", kFormat,
             "\", \"version\": \"", kPackedWeightsVersion,
             "\", \"weights\": ", json::quote(descriptions), "}");
  uint64_t offset = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    text +=
        concat(", ", json::quote(weights[i]->name),
               ": {\"dtype\": \"U8\", \"shape\": [", sizes[i],
               "], \"data_offsets\": [", offset, ", ", offset + sizes[i], "]}");
    offset += sizes[i];
  }
  return text + "}";
}

Error writeAll(int fd, const uint8_t *data, uint64_t size, uint64_t offset,
               const std::string &path) {
  while (size > 0) {
    ssize_t written = ::pwrite(fd, data, std::min<uint64_t>(size, 1u << 30),
                               static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return createError("cannot write '", path, "': ",
                         written < 0 ? std::strerror(errno) : "no space");
    data += written;
    offset += static_cast<uint64_t>(written);
    size -= static_cast<uint64_t>(written);
  }
  return Error::success();
}

std::string realPath(const std::string &path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

/// Refuses an output path that is not a regular file, is the checkpoint's
/// own file, or would become one of the checkpoint directory's files.
Error checkOutputPath(const std::string &path, const Checkpoint &checkpoint) {
  struct stat out;
  bool exists = ::stat(path.c_str(), &out) == 0;
  if (exists && !S_ISREG(out.st_mode))
    return createError("'", path, "' is not a regular file");
  struct stat root;
  if (::stat(checkpoint.path().c_str(), &root) != 0)
    return Error::success();
  if (S_ISREG(root.st_mode)) {
    if (exists && out.st_dev == root.st_dev && out.st_ino == root.st_ino)
      return createError("'", path, "' is the checkpoint itself");
    return Error::success();
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  bool safetensors = path.size() >= 12 &&
                     path.compare(path.size() - 12, 12, ".safetensors") == 0;
  if (safetensors &&
      realPath(dir.empty() ? "/" : dir) == realPath(checkpoint.path()))
    return createError("'", path, "' would be read as a file of checkpoint '",
                       checkpoint.path(),
                       "': write it to another directory or give it another "
                       "suffix");
  return Error::success();
}

} // namespace

PackedWeightDescription
fdc::runtime::describePackedWeight(const WeightSpec &weight) {
  PackedWeightDescription description;
  description.layout = weight.layoutKind;
  description.shape = weight.shape;
  description.sources = weight.sources;
  if (weight.layoutKind == WeightLayout::TiledCSL) {
    description.dtype = weight.dtype;
    description.tileRows = weight.tileRows;
    description.tileCols = weight.tileCols;
    description.cslVersion = kTiledCSLVersion;
  } else {
    description.groupSize = weight.groupSize;
    description.scaleDType = weight.scaleDType;
  }
  return description;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<PackedWeights>>
PackedWeights::open(const std::string &path) {
  Expected<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  if (!file)
    return file.takeError();
  auto fail = [&](const auto &...args) {
    return createError("packed-weights file '", path, "': ", args...);
  };
  const SafetensorsHeader &header = (*file)->header();
  auto meta = [&](const char *key) -> const std::string * {
    auto it = header.metadata.find(key);
    return it == header.metadata.end() ? nullptr : &it->second;
  };
  const std::string *format = meta("format");
  if (!format || *format != kFormat)
    return fail("its metadata has no \"format\": \"", kFormat,
                "\" (make one with fdc pack)");
  std::string version = std::to_string(kPackedWeightsVersion);
  const std::string *fileVersion = meta("version");
  if (!fileVersion || *fileVersion != version)
    return fail("format version '", fileVersion ? *fileVersion : "",
                "' is not the version this runtime reads (", version,
                "): pack the weights again with this fdc");
  const std::string *weightsText = meta("weights");
  if (!weightsText)
    return fail("its metadata has no \"weights\"");
  json::ParseOptions options;
  options.maxDepth = 8;
  Expected<json::Value> weightsJson = json::parse(*weightsText, options);
  if (!weightsJson)
    return fail("metadata \"weights\": ", weightsJson.error().message());
  const json::Object *object = weightsJson->getObject();
  if (!object)
    return fail("metadata \"weights\" is not a JSON object");

  std::map<std::string, PackedWeightDescription> weights;
  for (const auto &[name, value] : *object) {
    Expected<PackedWeightDescription> description = parseDescription(value);
    if (!description)
      return fail("weight '", name, "': ", description.error().message());
    const SafetensorsTensorInfo *tensor = header.find(name);
    if (!tensor)
      return fail("weight '", name, "' is described but has no tensor");
    if (tensor->dtype != DType::U8 || tensor->shape.size() != 1)
      return fail("weight '", name, "': tensor of dtype ",
                  safetensorsDTypeName(tensor->dtype), " and rank ",
                  tensor->shape.size(), ", not a U8 vector of packed bytes");
    weights.emplace(name, std::move(*description)); // (keys are unique)
  }
  for (const SafetensorsTensorInfo &tensor : header.tensors)
    if (!weights.count(tensor.name))
      return fail("tensor '", tensor.name, "' is not a described weight");
  return std::unique_ptr<PackedWeights>(
      new PackedWeights(std::move(*file), std::move(weights)));
}

std::vector<std::string> PackedWeights::weightNames() const {
  std::vector<std::string> names;
  for (const auto &entry : weights)
    names.push_back(entry.first);
  return names;
}

Error PackedWeights::checkDescription(
    const WeightSpec &weight, const PackedWeightDescription &found) const {
  PackedWeightDescription expected = describePackedWeight(weight);
  auto mismatch = [&](const char *what, const std::string &got,
                      const std::string &want) {
    return createError("packed-weights file '", path(), "': weight '",
                       weight.name, "': ", what, " ", got,
                       " does not match the library's ", want);
  };
  if (found.layout != expected.layout)
    return mismatch("layout", weightLayoutName(found.layout),
                    weightLayoutName(expected.layout));
  if (found.shape != expected.shape)
    return mismatch("shape", formatShape(found.shape),
                    formatShape(expected.shape));
  if (found.sources != expected.sources)
    return mismatch("sources", formatStrings(found.sources),
                    formatStrings(expected.sources));
  if (expected.layout == WeightLayout::TiledCSL) {
    if (found.cslVersion != expected.cslVersion)
      return createError("packed-weights file '", path(), "': weight '",
                         weight.name, "': tiled_csl layout version ",
                         found.cslVersion,
                         " is not the version this runtime reads (",
                         expected.cslVersion, "): pack the weights again");
    if (found.dtype != expected.dtype)
      return mismatch("dtype", std::string(manifestDTypeName(found.dtype)),
                      std::string(manifestDTypeName(expected.dtype)));
    if (found.tileRows != expected.tileRows ||
        found.tileCols != expected.tileCols)
      return mismatch("tile", formatShape({found.tileRows, found.tileCols}),
                      formatShape({expected.tileRows, expected.tileCols}));
    return Error::success();
  }
  if (found.groupSize != expected.groupSize)
    return mismatch("group_size", std::to_string(found.groupSize),
                    std::to_string(expected.groupSize));
  if (found.scaleDType != expected.scaleDType)
    return mismatch("scale_dtype",
                    std::string(manifestDTypeName(found.scaleDType)),
                    std::string(manifestDTypeName(expected.scaleDType)));
  return Error::success();
}

Error PackedWeights::checkMatches(const Manifest &manifest) const {
  std::map<std::string, const WeightSpec *> packed;
  for (const WeightSpec &weight : manifest.weights)
    if (isPacked(weight))
      packed.emplace(weight.name, &weight);
  for (const auto &[name, description] : weights)
    if (!packed.count(name))
      return createError("packed-weights file '", path(), "': weight '", name,
                         "' is not an int4 or tiled_csl weight of the "
                         "library");
  for (const auto &[name, weight] : packed) {
    auto it = weights.find(name);
    if (it == weights.end())
      return createError("packed-weights file '", path(), "' has no weight '",
                         name, "' (", weightLayoutName(weight->layoutKind),
                         ") of the library");
    if (Error err = checkDescription(*weight, it->second))
      return err;
  }
  return Error::success();
}

Error PackedWeights::load(const WeightSpec &weight, uint8_t *out) const {
  auto fail = [&](const auto &...args) {
    return createError("packed-weights file '", path(), "': weight '",
                       weight.name, "': ", args...);
  };
  auto it = weights.find(weight.name);
  if (it == weights.end())
    return createError("packed-weights file '", path(), "' has no weight '",
                       weight.name, "'");
  if (Error err = checkDescription(weight, it->second))
    return err;
  if (Error err = checkPackedLayout(weight))
    return fail(err.message());
  const SafetensorsTensorInfo &tensor = *file->find(weight.name);
  const uint8_t *data = file->tensorData(tensor);
  uint64_t size = tensor.byteSize();
  if (weight.layoutKind == WeightLayout::Int4) {
    if (size != weight.bytes)
      return fail("holds ", size, " bytes, int4 ", formatShape(weight.shape),
                  " packs to ", weight.bytes);
    std::memcpy(out, data, size);
    return Error::success();
  }
  if (size > weight.bytes)
    return fail("holds ", size, " bytes, more than the capacity of ",
                weight.bytes);
  // The copy is checked, not the mapping it came from (which another
  // process could change in between).
  std::memcpy(out, data, size);
  if (Error err = checkTiledCSL(out, size, weight.shape[0], weight.shape[1],
                                weight.tileRows, weight.tileCols)) {
    std::memset(out, 0, size);
    return fail("tiled_csl ", err.message());
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
/// A file created beside its destination and renamed over it by commit();
/// removed if never committed.
class TemporaryFile {
public:
  static Expected<TemporaryFile> create(const std::string &destination) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string path = concat(destination, ".tmp.", ::getpid(), ".", attempt);
      int fd =
          ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0)
        return TemporaryFile(path, destination, fd);
      if (errno != EEXIST)
        return createError("cannot create '", path,
                           "': ", std::strerror(errno));
    }
    return createError("cannot create a temporary file beside '", destination,
                       "'");
  }
  TemporaryFile(TemporaryFile &&other) noexcept
      : path(std::move(other.path)), destination(std::move(other.destination)),
        fd(std::exchange(other.fd, -1)) {}
  TemporaryFile(const TemporaryFile &) = delete;
  ~TemporaryFile() {
    if (fd >= 0) {
      ::close(fd);
      ::unlink(path.c_str());
    }
  }

  int get() const { return fd; }
  const std::string &name() const { return path; }

  Error commit() {
    int result = ::fsync(fd);
    int closed = ::close(std::exchange(fd, -1));
    if (result != 0 || closed != 0) {
      std::string reason = std::strerror(errno);
      ::unlink(path.c_str());
      return createError("cannot write '", path, "': ", reason);
    }
    if (::rename(path.c_str(), destination.c_str()) != 0) {
      std::string reason = std::strerror(errno);
      ::unlink(path.c_str());
      return createError("cannot rename '", path, "' to '", destination,
                         "': ", reason);
    }
    return Error::success();
  }

private:
  TemporaryFile(std::string path, std::string destination, int fd)
      : path(std::move(path)), destination(std::move(destination)), fd(fd) {}

  std::string path;
  std::string destination;
  int fd;
};
} // namespace

Expected<PackSummary>
fdc::runtime::writePackedWeights(const Manifest &manifest,
                                 const Checkpoint &checkpoint,
                                 const std::string &path) {
  std::vector<const WeightSpec *> weights;
  for (const WeightSpec &weight : manifest.weights)
    if (isPacked(weight))
      weights.push_back(&weight);
  if (weights.empty())
    return createError("the library has no int4 or tiled_csl weight to pack");
  if (Error err = checkOutputPath(path, checkpoint))
    return err;

  // The header is written last, padded to the length it takes with every
  // weight at its largest size, so the data can be written as it is packed.
  // (weight.bytes bounds the packed size: an int4 weight's size, a
  // tiled_csl weight's capacity.)
  std::vector<uint64_t> sizes;
  for (const WeightSpec *weight : weights)
    sizes.push_back(weight->bytes);
  uint64_t reserved = (headerText(weights, sizes).size() + 7) / 8 * 8;

  Expected<TemporaryFile> out = TemporaryFile::create(path);
  if (!out)
    return out.takeError();
  PackSummary summary;
  uint64_t dataStart = 8 + reserved;
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightSpec &weight = *weights[i];
    Expected<std::vector<float>> dense = loadPackSource(weight, checkpoint);
    if (!dense)
      return dense.takeError();
    std::vector<uint8_t> packed;
    try {
      packed.assign(weight.bytes, 0);
    } catch (const std::bad_alloc &) {
      return createError("weight '", weight.name, "': cannot allocate ",
                         weight.bytes, " bytes to pack it");
    }
    if (Error err = packWeight(weight, dense->data(), packed.data()))
      return err;
    sizes[i] = packedBytesUsed(weight, packed.data());
    if (Error err = writeAll(out->get(), packed.data(), sizes[i],
                             dataStart + summary.bytes, out->name()))
      return err;
    summary.bytes += sizes[i];
    (weight.layoutKind == WeightLayout::Int4 ? summary.int4Weights
                                             : summary.tiledCSLWeights)++;
  }
  std::string header = headerText(weights, sizes);
  // (Sizes at most their bounds take at most as many digits.)
  if (header.size() > reserved)
    return createError("internal error: the safetensors header of '", path,
                       "' outgrew the ", reserved, " bytes reserved for it");
  header.resize(reserved, ' ');
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<uint8_t>(reserved >> (8 * i));
  if (Error err = writeAll(out->get(), length, 8, 0, out->name()))
    return err;
  if (Error err =
          writeAll(out->get(), reinterpret_cast<const uint8_t *>(header.data()),
                   header.size(), 8, out->name()))
    return err;
  if (Error err = out->commit())
    return err;
  return summary;
}
