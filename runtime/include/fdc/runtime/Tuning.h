//===- Tuning.h - Dispatch tables of linears, measured and compiled -*- C++
//-*-===//
//
// The runtime's side of measured dispatch tables (no device here):
//  - the manifest's "linears" (every distinct decode.linear signature's
//    dispatch table as compiled, and where it came from) and a tuning
//    library's "tuning" (the candidates fdc_tune_launch launches);
//  - choosing each M bucket's fastest candidate and merging the winners
//    into a dispatch table;
//  - the tuning file fdc tune writes (and fdc compile --tuning reads);
//  - the table `fdc inspect` prints.
// See docs/model-library.md (manifest) and docs/cli.md (tuning file).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TUNING_H
#define FDC_RUNTIME_TUNING_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/Json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fdc::runtime {

/// A decode.linear's signature: what a measured table is keyed by.
struct LinearSignature {
  int64_t n = 0; // weight rows
  int64_t k = 0;
  std::string dtype;      // of the weight: f32, f16, bf16, int4
  std::string activation; // none, silu_gate_up
  bool bias = false;
  bool residual = false;

  /// "n=4096 k=4096 bf16 none +residual".
  std::string describe() const;
};

/// One kernel: its family and complete config (sorted by entry name).
struct KernelChoice {
  std::string family;
  std::vector<std::pair<std::string, int64_t>> config;

  /// "flat_gemm{batch_tiles=1,k_unroll=4,row_tiles=1,subgroups=16}".
  std::string describe() const;
  bool operator==(const KernelChoice &other) const {
    return family == other.family && config == other.config;
  }
};

/// kernels[i] runs for max_batch[i-1] < M <= max_batch[i]; the last kernel
/// (kernels.size() == maxBatch.size() + 1) for every larger M.
struct DispatchTable {
  std::vector<int64_t> maxBatch;
  std::vector<KernelChoice> kernels;
};

/// An entry of the manifest's "linears".
struct LinearTable {
  LinearSignature signature;
  int64_t count = 0;  // ops of the model with this signature and table
  std::string source; // "heuristic", "tuned" or "ir"
  DispatchTable table;
};

/// An entry of a tuning library's "tuning.signatures".
struct TuneSignature {
  LinearSignature signature;
  int64_t count = 0;
  std::string inputDType, outDType;
  int64_t outFeatures = 0;
  /// Scratch the candidates may use, bytes per batch row (0: none); the
  /// manifest's "workspace_bytes_per_row".
  int64_t workspaceBytesPerRow = 0;
  std::vector<KernelChoice> candidates;
};

/// The manifest's "linears" ([] when the library has none, e.g. a host
/// library or one compiled before they were recorded). Errors name `origin`.
Expected<std::vector<LinearTable>>
parseLinearTables(const json::Value &manifest, const std::string &origin);

/// The manifest's "tuning" signatures; an error when the manifest has none
/// (not a tuning library), its version is not FDC_TUNE_ABI_VERSION (a
/// library of another fdc: its FdcTuneArgs differ) or a field is malformed.
Expected<std::vector<TuneSignature>>
parseTuneSignatures(const json::Value &manifest, const std::string &origin);

/// Bytes of one element of a manifest dtype (f32 4, f16/bf16 2), or 0.
int64_t dtypeBytes(const std::string &dtype);

/// The M buckets fdc tune times by default: 1, 2, 4, ..., 256.
const std::vector<int64_t> &defaultTuneBuckets();

/// The index of the fastest candidate (the lowest time; unset entries did
/// not run), or -1 when none ran. Ties go to the earlier candidate.
int selectWinner(const std::vector<std::optional<double>> &micros);

/// The dispatch table of per-bucket winners: `buckets` ascending, one
/// winner (candidate index >= 0) each. Adjacent buckets with the same
/// winner merge; bucket b covers (previous bucket, b]; the last winner also
/// covers every M above the last bucket. Returns the bounds and the
/// candidate index of each kernel.
std::pair<std::vector<int64_t>, std::vector<int>>
mergeWinners(const std::vector<int64_t> &buckets,
             const std::vector<int> &winners);

/// The measurements of one signature.
struct SignatureTimings {
  TuneSignature signature;
  std::vector<int64_t> buckets;
  /// [bucket][candidate] microseconds per launch; unset: failed or skipped.
  std::vector<std::vector<std::optional<double>>> micros;
};

/// What fdc tune measured, as the tuning file.
struct TuningResult {
  std::string library, target, device, arch;
  std::vector<SignatureTimings> signatures;
};

/// The tuning file (JSON, version 1): per signature the merged dispatch
/// table, the candidates and the raw timings. Fails when a bucket has no
/// candidate that ran.
Expected<std::string> writeTuningFile(const TuningResult &result);

/// `fdc inspect`'s text: the library's target and, one row per linear
/// signature, the M ranges and their kernels; for a tuning library its
/// candidates per signature.
std::string formatLinearTables(const std::string &model,
                               const std::string &target,
                               const std::vector<LinearTable> &tables);
std::string formatTuneSignatures(const std::vector<TuneSignature> &signatures);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_TUNING_H
