/*===- FakeDevice.h - Device memory and kernels of the fake GPUs --*- C -*-===*\
|*                                                                            *|
|* What FakeCuda.c and FakeHip.c share: "device memory" in host memory, with  *|
|* every access bounds-checked against the live allocations, a sticky fault   *|
|* flag (set by an emulated out-of-bounds access, like a real fault), and the *|
|* two kernels of the GPU test libraries (TestGpuStep.h), emulated in C.      *|
|* Compiled into each fake, so each has its own state.                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H
#define FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H

#include <stddef.h>
#include <stdint.h>

/* Environment variable `name` as a decimal number, or `fallback`. */
long fakeEnvLong(const char *name, long fallback);

/* `bytes` > 0 of device memory, filled with 0xCD (garbage, like a real
 * allocation); NULL when the host is out of memory. */
void *fakeAllocate(size_t bytes);
/* Frees an allocation; 0 when `base` is not one. */
int fakeFree(void *base);
/* Whether [p, p + bytes) lies inside one live allocation. */
int fakeInBounds(const void *p, size_t bytes);

/* Set by an emulated out-of-bounds access; cleared by fakeClearFault. */
int fakeFaulted(void);
void fakeClearFault(void);

/* Runs kernel `name` over `grid` sequences with `params` (one pointer per
 * 8-byte parameter, as for cuLaunchKernel). Returns 0 when the kernel is not
 * one of the test kernels (it then does nothing). */
int fakeRunKernel(const char *name, uint32_t grid, void **params);

#endif /* FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H */
