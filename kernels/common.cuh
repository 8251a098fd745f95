// Device helpers shared by the kernels: warp/block reductions, bf16 conversions, cp.async copies,
// launch checks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cua_s1::kernels {

using bf16 = __nv_bfloat16;

// Throws with the kernel's name when the last launch failed (bad configuration or a sticky
// error from earlier work).
inline void check_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Lets `kernel` use `bytes` of dynamic shared memory (above the 48 KiB default); throws with
// `what` when the device cannot give that much.
inline void allow_dynamic_shared(const void* kernel, size_t bytes, const char* what) {
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + std::to_string(bytes) +
                             " bytes of shared memory: " + cudaGetErrorString(status));
}

inline unsigned blocks_for(long long count, unsigned threads) {
  return unsigned((count + threads - 1) / threads);
}

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `scratch` holds 32 floats of shared memory; the call synchronises the block.
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  value = warp_sum(value);
  __syncthreads();  // scratch may still be read by an earlier call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = int(blockDim.x >> 5);
  value = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(value);
}

__device__ __forceinline__ float block_max(float value, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  value = warp_max(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = int(blockDim.x >> 5);
  value = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(value);
}

__device__ __forceinline__ float to_float(bf16 value) { return __bfloat162float(value); }
__device__ __forceinline__ bf16 to_bf16(float value) { return __float2bfloat16_rn(value); }

// cp.async: 16 bytes global -> shared without registers; zero-filled when !valid (nothing is read then).
__device__ __forceinline__ void copy16_async(void* shared_dst, const void* global_src, bool valid) {
  const unsigned dst = unsigned(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(global_src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;\n"); }
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// The scalar activations of spec/model.md in fp32 (same formulas as the CPU backend).
__device__ __forceinline__ float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float softplus_f(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float gelu_tanh_f(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_erf_f(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}

}  // namespace cua_s1::kernels
