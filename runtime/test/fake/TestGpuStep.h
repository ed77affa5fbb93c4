/*===- TestGpuStep.h - The step of the GPU test libraries ---------*- C -*-===*\
|*                                                                            *|
|* The host code of TestCudaModel.c's and TestHipModel.c's fdc_model_step:    *|
|* it launches the two test kernels (emulated by ../fake/FakeDevice.c, real   *|
|* in TestCudaKernels.ptx) through FdcDeviceApi. `mode` picks a misbehaving   *|
|* step:                                                                      *|
|*   "bad_block"         4096 threads per block                               *|
|*   "unknown_kernel"    a name the manifest lacks                            *|
|*   "bad_pointer"       scratch + 2^40: a fault                              *|
|*   "bad_pointer_last"  the same in the last kernel only                     *|
|*   "big_shared"        64 KiB of dynamic shared memory                      *|
|*   "huge_shared"       1 MiB of dynamic shared memory (no GPU has it)       *|
|*   "skip_next_token"   the kernel that writes the outputs is not launched   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FDC_RUNTIME_TEST_FAKE_TESTGPUSTEP_H
#define FDC_RUNTIME_TEST_FAKE_TESTGPUSTEP_H

#include "fdc_model_abi.h"

#include <string.h>

/* Returns non-zero when a launch failed. */
static int testGpuStep(const FdcStepArgs *a, const char *mode, int64_t vocab) {
  const FdcDeviceApi *device = a->device;
  if (!mode)
    mode = "";
  uint32_t batch = (uint32_t)a->batch;
  void *scratch = a->scratch;
  if (strcmp(mode, "bad_pointer") == 0)
    scratch = (char *)scratch + ((int64_t)1 << 40);
  uint32_t shared = strcmp(mode, "big_shared") == 0    ? 64 * 1024
                    : strcmp(mode, "huge_shared") == 0 ? 1024 * 1024
                                                       : 0;

  void *storeParams[] = {(void *)&a->kv_cache,   (void *)&a->weights,
                         (void *)&a->tokens,     (void *)&a->positions,
                         (void *)&a->slots,      &scratch,
                         (void *)&a->max_context};
  if (device->launch(device->context, "fdc_test_store_kv", batch, 1, 1, 1, 1, 1,
                     shared, storeParams))
    return 1;
  if (strcmp(mode, "skip_next_token") == 0)
    return 0;

  if (strcmp(mode, "bad_pointer_last") == 0)
    scratch = (char *)scratch + ((int64_t)1 << 40);
  void *nextParams[] = {
      (void *)&a->tokens,      (void *)&a->weights,     &scratch,
      (void *)&a->temperature, (void *)&a->top_k,       (void *)&a->uniform,
      (void *)&a->logits,      (void *)&a->next_tokens, &vocab};
  const char *name = strcmp(mode, "unknown_kernel") == 0
                         ? "fdc_test_not_in_manifest"
                         : "fdc_test_next_token";
  uint32_t block = strcmp(mode, "bad_block") == 0 ? 4096 : 32;
  return device->launch(device->context, name, batch, 1, 1, block, 1, 1, 0,
                        nextParams);
}

#endif /* FDC_RUNTIME_TEST_FAKE_TESTGPUSTEP_H */
