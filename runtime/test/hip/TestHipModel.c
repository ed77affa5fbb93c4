/*===- TestHipModel.c - A rocm:gfx90a,gfx1100 model library for tests ----===*\
|*                                                                            *|
|* The HIP twin of ../cuda/TestCudaModel.c: same manifest and results as      *|
|* ../TestModel.c, computed by the two test kernels that the host step        *|
|* (../fake/TestGpuStep.h) launches through FdcDeviceApi. Its code objects    *|
|* are fake: FakeHip.c's format, "FAKEHSACO <arch>" and then the kernel       *|
|* names, each NUL-terminated, ending with an empty name. So these libraries  *|
|* run on FakeHip.c only.                                                     *|
|*                                                                            *|
|* Variants: TEST_TARGET (default "rocm:gfx90a,gfx1100"), TEST_EXTRA_KERNEL   *|
|* (the manifest lists a kernel the images lack), TEST_NO_GFX1100_IMAGE (no   *|
|* fdc_hsaco_gfx1100), TEST_EMPTY_GFX1100_IMAGE (fdc_hsaco_gfx1100_size is    *|
|* 0), TEST_WRONG_GFX1100_IMAGE (fdc_hsaco_gfx1100 holds gfx90a code),       *|
|* TEST_OVERSIZED_GFX1100_IMAGE (fdc_hsaco_gfx1100_size is 1 MiB),            *|
|* TEST_NOT_ELF_GFX1100_IMAGE (fdc_hsaco_gfx1100 has no ELF header).          *|
|* $FDC_TEST_HIP_STEP picks a misbehaving step (TestGpuStep.h).               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "TestGpuStep.h"
#include "fdc_model_abi.h"

#include <stdlib.h>

#ifndef TEST_TARGET
#define TEST_TARGET "rocm:gfx90a,gfx1100"
#endif

#ifdef TEST_EXTRA_KERNEL
#define EXTRA_KERNEL                                                           \
  ", {\"name\": \"fdc_test_absent\", \"op\": \"test.absent\"}"
#else
#define EXTRA_KERNEL ""
#endif

#define VOCAB 32
#define EXPORT __attribute__((visibility("default")))

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define ABI_VERSION_TEXT STRINGIFY(FDC_MODEL_ABI_VERSION)

EXPORT const uint32_t fdc_abi_version = FDC_MODEL_ABI_VERSION;
EXPORT const char fdc_target[] = TEST_TARGET;
EXPORT const char fdc_manifest[] =
    "{\"abi_version\": " ABI_VERSION_TEXT ", \"target\": \"" TEST_TARGET "\","
    " \"model\": \"test_hip_model\","
    " \"config\": {\"vocab_size\": 32, \"max_position_embeddings\": 64},"
    " \"kv_cache\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 1,"
    "   \"dtype\": \"f32\", \"int4_groups\": 0, \"row_bytes\": 4},"
    " \"weights_bytes\": 512,"
    " \"weights\": ["
    "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [2, 4],"
    "   \"layout\": \"dense\", \"offset\": 0, \"bytes\": 32,"
    "   \"sources\": [\"a\", \"b\"]},"
    "  {\"name\": \"n\", \"dtype\": \"bf16\", \"shape\": [4],"
    "   \"layout\": \"dense\", \"offset\": 256, \"bytes\": 8,"
    "   \"sources\": [\"n\"]}],"
    " \"scratch\": {\"bytes_per_sequence\": 4, \"fixed_bytes\": 0},"
    " \"kernels\": [{\"name\": \"fdc_test_store_kv\", \"op\": \"test.kv\"},"
    "   {\"name\": \"fdc_test_next_token\", \"op\": \"test.next\"}" EXTRA_KERNEL
    "]}";

/* Computed at load time, before the runtime reads it (see ../TestModel.c). */
EXPORT uint64_t fdc_manifest_hash;
__attribute__((constructor)) static void computeManifestHash(void) {
  fdc_manifest_hash =
      fdc_manifest_hash_of(fdc_manifest, sizeof(fdc_manifest) - 1);
}

/* A fake code object for `arch` holding the two test kernels: a 64-byte
   ELF header as the runtime checks it (ELFCLASS64, little endian, ET_DYN,
   EM_AMDGPU = 224, no program or section headers), then what FakeHip.c
   reads. TEST_NOT_ELF_GFX1100_IMAGE leaves the header out. */
/* clang-format off */
#define FAKE_ELF_HEADER                                                        \
  "\x7f" "ELF" "\x02\x01\x01" "\0\0\0\0\0\0\0\0\0" /* e_ident */            \
  "\x03\0" "\xe0\0" /* e_type, e_machine */                                   \
  "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
/* clang-format on */
#define FAKE_PAYLOAD(arch)                                                     \
  "FAKEHSACO " arch "\0fdc_test_store_kv\0fdc_test_next_token\0"
#define FAKE_HSACO(arch) FAKE_ELF_HEADER FAKE_PAYLOAD(arch)

EXPORT const uint8_t fdc_hsaco_gfx90a[] = FAKE_HSACO("gfx90a");
EXPORT const uint64_t fdc_hsaco_gfx90a_size = sizeof(fdc_hsaco_gfx90a);

#ifndef TEST_NO_GFX1100_IMAGE
#if defined(TEST_WRONG_GFX1100_IMAGE)
EXPORT const uint8_t fdc_hsaco_gfx1100[] = FAKE_HSACO("gfx90a");
#elif defined(TEST_NOT_ELF_GFX1100_IMAGE)
EXPORT const uint8_t fdc_hsaco_gfx1100[] = FAKE_PAYLOAD("gfx1100");
#else
EXPORT const uint8_t fdc_hsaco_gfx1100[] = FAKE_HSACO("gfx1100");
#endif
#if defined(TEST_EMPTY_GFX1100_IMAGE)
EXPORT const uint64_t fdc_hsaco_gfx1100_size = 0;
#elif defined(TEST_OVERSIZED_GFX1100_IMAGE)
EXPORT const uint64_t fdc_hsaco_gfx1100_size = 1 << 20;
#else
EXPORT const uint64_t fdc_hsaco_gfx1100_size = sizeof(fdc_hsaco_gfx1100);
#endif
#endif

EXPORT void fdc_model_step(const FdcStepArgs *a) {
  testGpuStep(a, getenv("FDC_TEST_HIP_STEP"), VOCAB);
}
