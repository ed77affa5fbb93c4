//===- nccl_latency.cu - NCCL all-reduce latency on 2 GPUs in a graph -----===//
//
// A measurement for docs/perf.md's tensor-parallel section, not part of fdc:
// the latency of NCCL's in-place bf16 all-reduce of a 7B-wide step's sizes
// ([B, 4096] for B = 1, 8, 32) on 2 GPUs, one thread per rank as the
// runtime drives them, 64 calls captured in one CUDA graph and replayed 20
// times; on buffers from cudaMalloc, then on ncclMemAlloc buffers
// registered as a symmetric window (NCCL 2.27 or later). On a machine with
// 2 GPUs and the nvidia-nccl wheel:
//
//   N=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
//   nvcc -O2 -std=c++17 -o /tmp/nccl_latency test/gpu/tp/nccl_latency.cu \
//     -I$N/include -L$N/lib -l:libnccl.so.2 -Xlinker -rpath=$N/lib
//   NCCL_NVLS_ENABLE=0 [NCCL_GRAPH_MIXING_SUPPORT=0] /tmp/nccl_latency
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

/// Exits naming the call when it returns non-zero.
#define CK(x)                                                                  \
  do {                                                                         \
    if (auto e = (x)) {                                                        \
      std::printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)e);         \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

int main() {
  ncclComm_t comms[2];
  int devs[2] = {0, 1};
  CK(ncclCommInitAll(comms, 2, devs));
  int v;
  ncclGetVersion(&v);
  printf("nccl %d\n", v);
  const int sizes[] = {4096, 4096 * 8, 4096 * 32};
  for (int symmetric = 0; symmetric < 2; ++symmetric)
    for (int size : sizes) {
      float results[2];
      auto rank = [&](int r) {
        CK(cudaSetDevice(r));
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        size_t bytes = 16 << 20;
        void *buf;
        ncclWindow_t win{};
        if (symmetric) {
          CK(ncclMemAlloc(&buf, bytes));
          CK(ncclCommWindowRegister(comms[r], buf, bytes, &win,
                                    NCCL_WIN_COLL_SYMMETRIC));
        } else
          CK(cudaMalloc(&buf, bytes));
        CK(cudaMemset(buf, 0, bytes));
        for (int i = 0; i < 10; ++i)
          CK(ncclAllReduce(buf, buf, size, ncclBfloat16, ncclSum, comms[r], s));
        CK(cudaStreamSynchronize(s));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < 64; ++i)
          CK(ncclAllReduce(buf, buf, size, ncclBfloat16, ncclSum, comms[r], s));
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        cudaEventRecord(a, s);
        for (int i = 0; i < 20; ++i)
          CK(cudaGraphLaunch(ge, s));
        cudaEventRecord(b, s);
        CK(cudaStreamSynchronize(s));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        results[r] = ms * 1000 / (20 * 64);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        if (symmetric) {
          CK(ncclCommWindowDeregister(comms[r], win));
          CK(ncclMemFree(buf));
        } else
          CK(cudaFree(buf));
      };
      std::thread t0(rank, 0), t1(rank, 1);
      t0.join();
      t1.join();
      printf("%s bf16 x %d: %.2f / %.2f us per all-reduce (in a graph of 64)\n",
             symmetric ? "symmetric window" : "plain buffer", size, results[0],
             results[1]);
    }
  for (auto c : comms)
    ncclCommDestroy(c);
}
