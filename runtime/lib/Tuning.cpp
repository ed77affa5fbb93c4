//===- Tuning.cpp - Dispatch tables of linears, measured and compiled -----===//

#include "fdc/runtime/Tuning.h"

#include "fdc_model_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

using namespace fdc::runtime;

std::string LinearSignature::describe() const {
  std::string text = concat("n=", n, " k=", k, " ", dtype);
  if (activation != "none")
    text += " " + activation;
  if (bias)
    text += " +bias";
  if (residual)
    text += " +residual";
  return text;
}

std::string KernelChoice::describe() const {
  std::string text = family + "{";
  for (size_t i = 0; i < config.size(); ++i)
    text += concat(i ? "," : "", config[i].first, "=", config[i].second);
  return text + "}";
}

namespace {

/// Reads fields of one JSON object; errors read "ORIGIN: WHERE: ...".
class Reader {
public:
  Reader(const std::string &origin, std::string where)
      : origin(origin), where(std::move(where)) {}

  Error fail(const std::string &what) const {
    return createError(origin, ": ", where, ": ", what);
  }
  Expected<const json::Object *> object(const json::Value &value) const {
    const json::Object *result = value.getObject();
    if (!result)
      return fail("must be an object");
    return result;
  }
  Expected<int64_t> integer(const json::Object &object, const char *key) const {
    auto it = object.find(key);
    std::optional<int64_t> value =
        it == object.end() ? std::nullopt : it->second.getInt64();
    if (!value || *value < 0)
      return fail(concat("'", key, "' must be a non-negative integer"));
    return *value;
  }
  /// `key` in [0, max], or `absent` when the object has no `key`.
  Expected<int64_t> optionalInteger(const json::Object &object, const char *key,
                                    int64_t absent, int64_t max) const {
    auto it = object.find(key);
    if (it == object.end())
      return absent;
    std::optional<int64_t> value = it->second.getInt64();
    if (!value || *value < 0 || *value > max)
      return fail(concat("'", key, "' must be an integer in [0, ", max, "]"));
    return *value;
  }
  Expected<std::string> string(const json::Object &object,
                               const char *key) const {
    auto it = object.find(key);
    const std::string *value =
        it == object.end() ? nullptr : it->second.getString();
    if (!value)
      return fail(concat("'", key, "' must be a string"));
    return *value;
  }
  Expected<bool> boolean(const json::Object &object, const char *key) const {
    auto it = object.find(key);
    std::optional<bool> value =
        it == object.end() ? std::nullopt : it->second.getBool();
    if (!value)
      return fail(concat("'", key, "' must be true or false"));
    return *value;
  }

  const std::string &origin;
  std::string where;
};

Expected<LinearSignature> readSignature(const Reader &r,
                                        const json::Object &object) {
  LinearSignature s;
  Expected<int64_t> n = r.integer(object, "n");
  if (!n)
    return n.takeError();
  Expected<int64_t> k = r.integer(object, "k");
  if (!k)
    return k.takeError();
  Expected<std::string> dtype = r.string(object, "dtype");
  if (!dtype)
    return dtype.takeError();
  Expected<std::string> activation = r.string(object, "activation");
  if (!activation)
    return activation.takeError();
  Expected<bool> bias = r.boolean(object, "bias");
  if (!bias)
    return bias.takeError();
  Expected<bool> residual = r.boolean(object, "residual");
  if (!residual)
    return residual.takeError();
  s.n = *n;
  s.k = *k;
  s.dtype = *dtype;
  s.activation = *activation;
  s.bias = *bias;
  s.residual = *residual;
  return s;
}

Expected<KernelChoice> readKernel(const Reader &r, const json::Value &value) {
  Expected<const json::Object *> object = r.object(value);
  if (!object)
    return object.takeError();
  KernelChoice kernel;
  Expected<std::string> family = r.string(**object, "family");
  if (!family)
    return family.takeError();
  kernel.family = *family;
  auto config = (*object)->find("config");
  const json::Object *entries =
      config == (*object)->end() ? nullptr : config->second.getObject();
  if (!entries)
    return r.fail("'config' must be an object of integers");
  for (const auto &[name, entry] : *entries) {
    std::optional<int64_t> integer = entry.getInt64();
    if (!integer)
      return r.fail(concat("config entry '", name, "' must be an integer"));
    kernel.config.push_back({name, *integer});
  }
  // json::Object is a sorted map: the config is sorted by name.
  return kernel;
}

Expected<std::vector<KernelChoice>>
readKernels(const Reader &r, const json::Value *value, const char *key) {
  const json::Array *list = value ? value->getArray() : nullptr;
  if (!list)
    return r.fail(concat("'", key, "' must be an array"));
  std::vector<KernelChoice> kernels;
  for (size_t i = 0; i < list->size(); ++i) {
    Expected<KernelChoice> kernel = readKernel(
        Reader(r.origin, concat(r.where, ".", key, "[", i, "]")), (*list)[i]);
    if (!kernel)
      return kernel.takeError();
    kernels.push_back(std::move(*kernel));
  }
  return kernels;
}

Expected<DispatchTable> readDispatch(const Reader &r,
                                     const json::Object &object) {
  auto it = object.find("dispatch");
  const json::Object *dispatch =
      it == object.end() ? nullptr : it->second.getObject();
  if (!dispatch)
    return r.fail("'dispatch' must be an object");
  Reader inner(r.origin, r.where + ".dispatch");
  DispatchTable table;
  const json::Value *bounds = nullptr;
  if (auto found = dispatch->find("max_batch"); found != dispatch->end())
    bounds = &found->second;
  if (!bounds || !bounds->getArray())
    return inner.fail("'max_batch' must be an array");
  for (const json::Value &bound : *bounds->getArray()) {
    std::optional<int64_t> value = bound.getInt64();
    if (!value || *value < 1 ||
        (!table.maxBatch.empty() && *value <= table.maxBatch.back()))
      return inner.fail("'max_batch' must be increasing positive integers");
    table.maxBatch.push_back(*value);
  }
  const json::Value *kernels = nullptr;
  if (auto found = dispatch->find("kernels"); found != dispatch->end())
    kernels = &found->second;
  Expected<std::vector<KernelChoice>> list =
      readKernels(inner, kernels, "kernels");
  if (!list)
    return list.takeError();
  table.kernels = std::move(*list);
  if (table.kernels.size() != table.maxBatch.size() + 1)
    return inner.fail(concat("needs one kernel more than bounds, got ",
                             table.kernels.size(), " kernels for ",
                             table.maxBatch.size(), " bounds"));
  return table;
}

const json::Array *memberArray(const json::Value &value, const char *key) {
  const json::Value *member = value.get(key);
  return member ? member->getArray() : nullptr;
}

std::string kernelJson(const KernelChoice &kernel) {
  std::string out =
      "{\"family\": " + json::quote(kernel.family) + ", \"config\": {";
  for (size_t i = 0; i < kernel.config.size(); ++i)
    out += concat(i ? ", " : "", json::quote(kernel.config[i].first), ": ",
                  kernel.config[i].second);
  return out + "}}";
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

std::string padRight(std::string text, size_t width) {
  if (text.size() < width)
    text.append(width - text.size(), ' ');
  return text;
}

/// The scratch one batch row of a candidate may claim: 1 GiB.
constexpr int64_t kMaxWorkspaceBytesPerRow = int64_t(1) << 30;

/// One entry of "tuning.signatures".
Expected<TuneSignature> readTuneSignature(const Reader &r,
                                          const json::Object &object) {
  TuneSignature s;
  Expected<LinearSignature> signature = readSignature(r, object);
  if (!signature)
    return signature.takeError();
  s.signature = std::move(*signature);
  Expected<std::string> input = r.string(object, "input_dtype");
  if (!input)
    return input.takeError();
  Expected<std::string> out = r.string(object, "out_dtype");
  if (!out)
    return out.takeError();
  Expected<int64_t> features = r.integer(object, "out_features");
  if (!features)
    return features.takeError();
  Expected<int64_t> workspace = r.optionalInteger(
      object, "workspace_bytes_per_row", 0, kMaxWorkspaceBytesPerRow);
  if (!workspace)
    return workspace.takeError();
  auto candidates = object.find("candidates");
  Expected<std::vector<KernelChoice>> kernels =
      readKernels(r, candidates == object.end() ? nullptr : &candidates->second,
                  "candidates");
  if (!kernels)
    return kernels.takeError();
  s.inputDType = *input;
  s.outDType = *out;
  s.outFeatures = *features;
  s.workspaceBytesPerRow = *workspace;
  s.candidates = std::move(*kernels);
  constexpr int64_t kMaxDim = int64_t(1) << 31;
  if (s.signature.n < 1 || s.signature.k < 1 || s.outFeatures < 1 ||
      s.signature.n > kMaxDim || s.signature.k > kMaxDim ||
      s.outFeatures > s.signature.n)
    return r.fail("n, k and out_features must be in [1, 2^31] with "
                  "out_features <= n");
  if (!dtypeBytes(s.signature.dtype) || !dtypeBytes(s.inputDType) ||
      !dtypeBytes(s.outDType))
    return r.fail("dtypes must be f32, f16 or bf16");
  if (s.candidates.empty())
    return r.fail("has no candidates");
  return s;
}

/// Checks that "tuning.version" is this runtime's FDC_TUNE_ABI_VERSION: the
/// library's fdc_tune_launch reads FdcTuneArgs of that version.
Error checkTuneVersion(const json::Value &tuning, const std::string &origin) {
  const json::Value *member = tuning.get("version");
  std::optional<int64_t> version = member ? member->getInt64() : std::nullopt;
  if (!version)
    return createError(origin, ": tuning.version must be an integer");
  if (*version != FDC_TUNE_ABI_VERSION)
    return createError(origin, ": tuning.version is ", *version,
                       ", but this runtime reads version ",
                       FDC_TUNE_ABI_VERSION,
                       " (its fdc_tune_launch takes other FdcTuneArgs): "
                       "rebuild the library with this fdc (fdc compile "
                       "--tuning-candidates)");
  return Error::success();
}

} // namespace

Expected<std::vector<LinearTable>>
fdc::runtime::parseLinearTables(const json::Value &manifest,
                                const std::string &origin) {
  std::vector<LinearTable> tables;
  const json::Value *member = manifest.get("linears");
  if (!member)
    return tables;
  const json::Array *list = member->getArray();
  if (!list)
    return createError(origin, ": 'linears' must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    Reader r(origin, concat("linears[", i, "]"));
    Expected<const json::Object *> object = r.object((*list)[i]);
    if (!object)
      return object.takeError();
    LinearTable table;
    Expected<LinearSignature> signature = readSignature(r, **object);
    if (!signature)
      return signature.takeError();
    Expected<int64_t> count = r.integer(**object, "count");
    if (!count)
      return count.takeError();
    Expected<std::string> source = r.string(**object, "source");
    if (!source)
      return source.takeError();
    Expected<DispatchTable> dispatch = readDispatch(r, **object);
    if (!dispatch)
      return dispatch.takeError();
    table.signature = std::move(*signature);
    table.count = *count;
    table.source = std::move(*source);
    table.table = std::move(*dispatch);
    tables.push_back(std::move(table));
  }
  return tables;
}

Expected<std::vector<TuneSignature>>
fdc::runtime::parseTuneSignatures(const json::Value &manifest,
                                  const std::string &origin) {
  const json::Value *tuning = manifest.get("tuning");
  if (!tuning)
    return createError(origin, " is not a tuning library: its manifest has no "
                               "\"tuning\" (compile it with fdc compile "
                               "--tuning-candidates)");
  if (Error err = checkTuneVersion(*tuning, origin))
    return err;
  const json::Array *list = memberArray(*tuning, "signatures");
  if (!list)
    return createError(origin, ": tuning.signatures must be an array");
  std::vector<TuneSignature> signatures;
  for (size_t i = 0; i < list->size(); ++i) {
    Reader r(origin, concat("tuning.signatures[", i, "]"));
    Expected<const json::Object *> object = r.object((*list)[i]);
    if (!object)
      return object.takeError();
    Expected<TuneSignature> signature = readTuneSignature(r, **object);
    if (!signature)
      return signature.takeError();
    signatures.push_back(std::move(*signature));
  }
  return signatures;
}

int64_t fdc::runtime::dtypeBytes(const std::string &dtype) {
  if (dtype == "f32")
    return 4;
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  return 0;
}

const std::vector<int64_t> &fdc::runtime::defaultTuneBuckets() {
  static const std::vector<int64_t> buckets = {1,  2,  4,   8,  16,
                                               32, 64, 128, 256};
  return buckets;
}

int fdc::runtime::selectWinner(const std::vector<std::optional<double>> &us) {
  int best = -1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] && std::isfinite(*us[i]) && (best < 0 || *us[i] < *us[best]))
      best = static_cast<int>(i);
  return best;
}

std::pair<std::vector<int64_t>, std::vector<int>>
fdc::runtime::mergeWinners(const std::vector<int64_t> &buckets,
                           const std::vector<int> &winners) {
  std::vector<int64_t> bounds;
  std::vector<int> kernels;
  for (size_t i = 0; i < winners.size() && i < buckets.size(); ++i) {
    if (!kernels.empty() && kernels.back() == winners[i]) {
      bounds.back() = buckets[i];
      continue;
    }
    kernels.push_back(winners[i]);
    bounds.push_back(buckets[i]);
  }
  // The last kernel has no bound: it runs for every larger M.
  if (!bounds.empty())
    bounds.pop_back();
  return {bounds, kernels};
}

Expected<std::string>
fdc::runtime::writeTuningFile(const TuningResult &result) {
  std::ostringstream os;
  os << "{\n  \"fdc_tuning_version\": 1,\n"
     << "  \"library\": " << json::quote(result.library) << ",\n"
     << "  \"target\": " << json::quote(result.target) << ",\n"
     << "  \"device\": " << json::quote(result.device) << ",\n"
     << "  \"arch\": " << json::quote(result.arch) << ",\n"
     << "  \"signatures\": [";
  for (size_t s = 0; s < result.signatures.size(); ++s) {
    const SignatureTimings &timings = result.signatures[s];
    const TuneSignature &tuned = timings.signature;
    const LinearSignature &sig = tuned.signature;
    std::vector<int> winners;
    for (size_t b = 0; b < timings.buckets.size(); ++b) {
      int winner =
          b < timings.micros.size() ? selectWinner(timings.micros[b]) : -1;
      if (winner < 0 || static_cast<size_t>(winner) >= tuned.candidates.size())
        return createError("signature ", sig.describe(),
                           ": no candidate ran "
                           "at M = ",
                           timings.buckets[b]);
      winners.push_back(winner);
    }
    auto [bounds, kernels] = mergeWinners(timings.buckets, winners);
    os << (s ? ",\n" : "\n") << "    {\"n\": " << sig.n << ", \"k\": " << sig.k
       << ", \"dtype\": " << json::quote(sig.dtype)
       << ", \"activation\": " << json::quote(sig.activation)
       << ", \"bias\": " << (sig.bias ? "true" : "false")
       << ", \"residual\": " << (sig.residual ? "true" : "false") << ",\n"
       << "     \"dispatch\": {\"max_batch\": [";
    for (size_t i = 0; i < bounds.size(); ++i)
      os << (i ? ", " : "") << bounds[i];
    os << "], \"kernels\": [";
    for (size_t i = 0; i < kernels.size(); ++i)
      os << (i ? ", " : "") << kernelJson(tuned.candidates[kernels[i]]);
    os << "]},\n     \"candidates\": [";
    for (size_t i = 0; i < tuned.candidates.size(); ++i)
      os << (i ? ",\n        " : "") << kernelJson(tuned.candidates[i]);
    os << "],\n     \"timings\": [";
    for (size_t b = 0; b < timings.buckets.size(); ++b) {
      os << (b ? ",\n        " : "") << "{\"batch\": " << timings.buckets[b]
         << ", \"best\": " << winners[b] << ", \"us\": [";
      for (size_t c = 0; c < timings.micros[b].size(); ++c) {
        const std::optional<double> &us = timings.micros[b][c];
        os << (c ? ", " : "") << (us ? number(*us) : "null");
      }
      os << "]}";
    }
    os << "]}";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

std::string
fdc::runtime::formatLinearTables(const std::string &model,
                                 const std::string &target,
                                 const std::vector<LinearTable> &tables) {
  std::ostringstream os;
  os << "model " << model << ", target " << target << "\n";
  if (tables.empty()) {
    os << "no linear dispatch tables"
       << (target == "host" ? " (a host library runs no GPU kernels)" : "")
       << "\n";
    return os.str();
  }
  os << "linear dispatch tables (" << tables.size() << "):\n";
  os << padRight("  signature", 44) << padRight("ops", 5)
     << padRight("source", 11) << padRight("M", 10) << "kernel\n";
  for (const LinearTable &table : tables) {
    const DispatchTable &dispatch = table.table;
    for (size_t i = 0; i < dispatch.kernels.size(); ++i) {
      int64_t lo = i == 0 ? 1 : dispatch.maxBatch[i - 1] + 1;
      std::string range;
      if (i < dispatch.maxBatch.size())
        range = lo == dispatch.maxBatch[i]
                    ? std::to_string(lo)
                    : concat(lo, "-", dispatch.maxBatch[i]);
      else
        range = concat(lo, "+");
      if (i == 0)
        os << padRight("  " + table.signature.describe(), 44)
           << padRight(std::to_string(table.count), 5)
           << padRight(table.source, 11);
      else
        os << std::string(44 + 5 + 11, ' ');
      os << padRight(range, 10) << dispatch.kernels[i].describe() << "\n";
    }
  }
  return os.str();
}

std::string fdc::runtime::formatTuneSignatures(
    const std::vector<TuneSignature> &signatures) {
  std::ostringstream os;
  size_t total = 0;
  for (const TuneSignature &s : signatures)
    total += s.candidates.size();
  os << "tuning library: " << signatures.size() << " signatures, " << total
     << " candidates (fdc_tune_launch)\n";
  for (size_t i = 0; i < signatures.size(); ++i) {
    os << "  [" << i << "] " << signatures[i].signature.describe() << ": "
       << signatures[i].candidates.size() << " candidates";
    if (int64_t bytes = signatures[i].workspaceBytesPerRow)
      os << ", workspace " << bytes << " bytes per row";
    os << "\n";
    for (size_t c = 0; c < signatures[i].candidates.size(); ++c)
      os << "      " << c << ": " << signatures[i].candidates[c].describe()
         << "\n";
  }
  return os.str();
}
