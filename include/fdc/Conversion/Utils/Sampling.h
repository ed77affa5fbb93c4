//===- Sampling.h - the sampling rule of decode.sample ----------*- C++ -*-===//

#ifndef FDC_CONVERSION_UTILS_SAMPLING_H
#define FDC_CONVERSION_UTILS_SAMPLING_H

#include "fdc/Conversion/Utils/Emitter.h"

namespace fdc {

/// The sampled branch of decode.sample (temperature > 0) for row `i`:
/// out[i] = the token drawn with uniform[i] from softmax(logits[i] / t)
/// restricted to the top_k[i] largest and the smallest set reaching top_p[i].
void emitSampleRow(Emitter &e, mlir::Value logits, mlir::Value uniform,
                   mlir::Value temperature, mlir::Value topK, mlir::Value topP,
                   mlir::Value out, mlir::Value i);

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_SAMPLING_H
