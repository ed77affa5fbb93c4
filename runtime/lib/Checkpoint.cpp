//===- Checkpoint.cpp - Tensors of a (sharded) safetensors checkpoint -----===//

#include "fdc/runtime/Checkpoint.h"

#include "fdc/runtime/Json.h"
#include "fdc/runtime/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>

using namespace fdc::runtime;

namespace {
/// model.safetensors.index.json is a small map of tensor names to files;
/// anything larger is refused before it is read (the frontend's limit too).
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool isRegularFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// Whether something (of any type) is at `path`.
bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

Expected<std::vector<std::string>>
listSafetensorsFiles(const std::string &dir) {
  DIR *handle = ::opendir(dir.c_str());
  if (!handle)
    return createError("cannot list '", dir, "': ", std::strerror(errno));
  std::vector<std::string> names;
  while (struct dirent *entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (endsWith(name, ".safetensors"))
      names.push_back(name);
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

Error Checkpoint::addFile(const std::string &filePath) {
  Expected<std::unique_ptr<SafetensorsFile>> file =
      SafetensorsFile::open(filePath);
  if (!file)
    return file.takeError();
  size_t index = files.size();
  for (const SafetensorsTensorInfo &info : (*file)->header().tensors) {
    auto [it, inserted] = tensorToFile.emplace(info.name, index);
    if (!inserted)
      return createError("checkpoint '", rootPath, "': tensor '", info.name,
                         "' is in both '", files[it->second]->path(), "' and '",
                         filePath, "'");
  }
  files.push_back(std::move(*file));
  return Error::success();
}

Expected<std::unique_ptr<Checkpoint>>
Checkpoint::open(const std::string &path) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  checkpoint->rootPath = path;

  if (isRegularFile(path)) {
    if (Error err = checkpoint->addFile(path))
      return err;
    return checkpoint;
  }
  if (!isDirectory(path))
    return createError("checkpoint '", path,
                       "' is neither a directory nor a file");

  // A well-known name that is not a regular file (a FIFO, a directory) is
  // refused rather than skipped.
  std::string indexPath = path + "/model.safetensors.index.json";
  if (exists(indexPath)) {
    Expected<std::string> text = readRegularFile(indexPath, kMaxIndexBytes);
    if (!text)
      return text.takeError();
    Expected<json::Value> index = json::parse(*text);
    if (!index)
      return createError("'", indexPath, "': ", index.error().message());
    const json::Value *weightMap = index->get("weight_map");
    if (!weightMap || !weightMap->getObject())
      return createError("'", indexPath, "': missing object \"weight_map\"");
    // Open each shard once, in name order.
    std::map<std::string, std::vector<std::string>> tensorsByFile;
    for (const auto &[tensor, file] : *weightMap->getObject()) {
      const std::string *fileName = file.getString();
      if (!fileName)
        return createError("'", indexPath, "': weight_map entry '", tensor,
                           "' is not a string");
      if (fileName->find('/') != std::string::npos || *fileName == ".." ||
          fileName->empty())
        return createError("'", indexPath, "': weight_map entry '", tensor,
                           "' names '", *fileName,
                           "', which is not a file of the checkpoint");
      tensorsByFile[*fileName].push_back(tensor);
    }
    for (const auto &[fileName, tensors] : tensorsByFile) {
      std::string filePath = path + "/" + fileName;
      if (Error err = checkpoint->addFile(filePath))
        return err;
      const SafetensorsFile &file = *checkpoint->files.back();
      for (const std::string &tensor : tensors)
        if (!file.find(tensor))
          return createError("'", indexPath, "' maps tensor '", tensor,
                             "' to '", fileName, "', which lacks it");
    }
    return checkpoint;
  }

  std::string singlePath = path + "/model.safetensors";
  if (exists(singlePath)) {
    if (Error err = checkpoint->addFile(singlePath))
      return err;
    return checkpoint;
  }

  Expected<std::vector<std::string>> names = listSafetensorsFiles(path);
  if (!names)
    return names.takeError();
  if (names->empty())
    return createError("checkpoint '", path,
                       "' holds no .safetensors file and no "
                       "model.safetensors.index.json");
  for (const std::string &name : *names)
    if (Error err = checkpoint->addFile(path + "/" + name))
      return err;
  return checkpoint;
}

std::optional<CheckpointTensor>
Checkpoint::lookup(std::string_view name) const {
  auto it = tensorToFile.find(name);
  if (it == tensorToFile.end())
    return std::nullopt;
  const SafetensorsFile &file = *files[it->second];
  CheckpointTensor tensor;
  tensor.info = file.find(name);
  if (!tensor.info)
    return std::nullopt;
  tensor.data = file.tensorData(*tensor.info);
  tensor.file = &file.path();
  return tensor;
}

std::vector<std::string> Checkpoint::tensorNames() const {
  std::vector<std::string> names;
  for (const auto &entry : tensorToFile)
    names.push_back(entry.first);
  return names;
}
