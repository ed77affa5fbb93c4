//===- ToolCommands.h - `fdc inspect`, `fdc tune`, `fdc pack` --*- C++ -*-===//
//
// The runtime's command lines beside `fdc run` (RunCommand.h), built without
// LLVM as fdc-inspect, fdc-tune and fdc-pack and forwarded by the `fdc` driver.
// Global (not namespaced) like fdcRunMain. argv[0] names the command in
// messages; each returns the exit code.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TOOLCOMMANDS_H
#define FDC_RUNTIME_TOOLCOMMANDS_H

/// fdc-inspect MODEL.so [--manifest]
/// Prints the library's target and, per linear signature, the dispatch
/// table compiled (M ranges and kernels) and its source; for a tuning
/// library its candidates. --manifest prints the manifest JSON instead.
int fdcInspectMain(int argc, char **argv);

/// fdc-tune TUNING.so -o tuning.json [--device N] [--buckets 1,2,4,...]
///   [--replays N]
/// Times every candidate of a tuning library on the GPU and writes the
/// tuning file that fdc compile --tuning reads.
int fdcTuneMain(int argc, char **argv);

/// fdc-pack MODEL.so --weights CHECKPOINT -o PACKED
/// Packs the library's int4 and tiled_csl weights from the checkpoint into
/// a packed-weights file (PackedWeights.h) that fdc run --packed-weights
/// loads without packing.
int fdcPackMain(int argc, char **argv);

#endif // FDC_RUNTIME_TOOLCOMMANDS_H
