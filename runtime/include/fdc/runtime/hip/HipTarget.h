//===- HipTarget.h - rocm:gfxXXX targets, pure helpers ----------*- C++ -*-===//
//
// Everything about a `rocm:...` model library that needs no GPU: parsing the
// target string, the code-object symbols it implies, and finding the
// device's architecture in what hipGetDeviceProperties wrote. Built into
// every runtime, with or without the HIP backend.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_HIP_HIPTARGET_H
#define FDC_RUNTIME_HIP_HIPTARGET_H

#include "fdc/runtime/Error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime::hip {

struct HipTarget {
  /// "gfx90a", "gfx1100", ... in the order the target lists them.
  std::vector<std::string> archs;
};

/// True when `target` starts with "rocm:" (well-formed or not).
bool isHipTarget(std::string_view target);

/// Parses "rocm:gfx90a" or "rocm:gfx90a,gfx942,gfx1100": "rocm:" then a
/// comma-separated, non-empty list of distinct `gfx[0-9a-z]+` with no spaces
/// and no target features (":xnack+").
Expected<HipTarget> parseHipTarget(std::string_view target);

/// The code object of `arch`: "fdc_hsaco_gfx90a" (const uint8_t[]).
std::string hsacoSymbol(std::string_view arch);
/// Its size in bytes: "fdc_hsaco_gfx90a_size" (const uint64_t).
std::string hsacoSizeSymbol(std::string_view arch);

/// The arch of a gcnArchName: "gfx90a:sramecc+:xnack-" -> "gfx90a" (the
/// part before the first ':').
std::string archOfGcnArchName(std::string_view gcnArchName);

/// The symbol of the code object to load on a device of arch `deviceArch`
/// ("gfx90a"): the target's own arch, as there is no portable fallback like
/// PTX. std::nullopt when the target does not list it.
std::optional<std::string> hsacoSymbolFor(const HipTarget &target,
                                          std::string_view deviceArch);

/// The gcnArchName ("gfx90a:sramecc+:xnack-") in the `size` bytes a
/// hipGetDeviceProperties entry point wrote at `properties`, found without
/// knowing the struct's layout, which ROCm 6 changed (hipDeviceProp_tR0000
/// vs R0600) and may change again: the first NUL-terminated string after the
/// 256-byte `name` field (first in every layout) that starts at a NUL-
/// preceded byte, is "gfx" + [0-9a-z]+, optionally followed by ':' and
/// target features ([0-9a-zA-Z_:+-]), and ends within 256 bytes. "" when
/// there is none.
std::string findGcnArchName(const void *properties, size_t size);

} // namespace fdc::runtime::hip

#endif // FDC_RUNTIME_HIP_HIPTARGET_H
