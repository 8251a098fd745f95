// Shared by the GPU micro-benchmarks: mean event time of repeated work, random bf16 operands.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <random>
#include <vector>

#include "gpu/cuda_check.hpp"

namespace cua_s1::bench {

// Mean milliseconds of `iterations` calls of `work` on `stream`, after two warm-ups.
template <class Work>
double time_ms(cudaStream_t stream, int iterations, Work work) {
  using gpu::check_cuda;
  for (int i = 0; i < 2; ++i) work();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) work();
  check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iterations;
}

// A device buffer (cudaMalloc'd; the caller frees it) of `count` random bf16 values in
// [-scale, scale).
inline __nv_bfloat16* random_bf16(size_t count, float scale = 1.0f, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-scale, scale);
  std::vector<__nv_bfloat16> host(count);
  for (auto& v : host) v = __float2bfloat16(value(rng));
  __nv_bfloat16* device = nullptr;
  gpu::check_cuda(cudaMalloc(&device, count * sizeof(__nv_bfloat16)), "cudaMalloc");
  gpu::check_cuda(
      cudaMemcpy(device, host.data(), count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice),
      "cudaMemcpy");
  return device;
}

}  // namespace cua_s1::bench
