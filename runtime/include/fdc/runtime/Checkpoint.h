//===- Checkpoint.h - Tensors of a (sharded) safetensors checkpoint -*- C++
//-*-===//
//
// A checkpoint is a directory holding either
//   - model.safetensors.index.json ({"weight_map": {tensor: file}}) and the
//     shards it names, or
//   - one model.safetensors, or
//   - any number of *.safetensors files (tensor names must be unique),
// or the path of a single .safetensors file.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_CHECKPOINT_H
#define FDC_RUNTIME_CHECKPOINT_H

#include "fdc/runtime/Safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime {

/// One tensor of a checkpoint: its dtype, shape and bytes (in a mapped file
/// that lives as long as the Checkpoint).
struct CheckpointTensor {
  const SafetensorsTensorInfo *info = nullptr;
  const uint8_t *data = nullptr;
  /// The file that holds the tensor.
  const std::string *file = nullptr;

  DType dtype() const { return info->dtype; }
  const std::vector<int64_t> &shape() const { return info->shape; }
  uint64_t byteSize() const { return info->byteSize(); }
};

class Checkpoint {
public:
  /// Opens and validates every file of the checkpoint at `path`.
  static Expected<std::unique_ptr<Checkpoint>> open(const std::string &path);

  /// The tensor called `name`, or nullopt.
  std::optional<CheckpointTensor> lookup(std::string_view name) const;
  /// All tensor names, sorted.
  std::vector<std::string> tensorNames() const;
  const std::string &path() const { return rootPath; }

private:
  Checkpoint() = default;
  Error addFile(const std::string &filePath);

  std::string rootPath;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  /// Tensor name -> index into `files`.
  std::map<std::string, size_t, std::less<>> tensorToFile;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_CHECKPOINT_H
