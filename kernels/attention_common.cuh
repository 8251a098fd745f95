// Device pieces both flash attention kernels share: cp.async copies, the online softmax step of
// one m16 row tile, and the final normalise-and-store of its output rows. Fragments use the
// mma.sync m16n8 accumulator layout (which wgmma's m64nN accumulator repeats per warp): lane
// (group = lane / 4, quad = lane % 4) holds rows group and group + 8, columns 8 j + 2 quad + {0, 1}.
#pragma once

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/flash_attention.hpp"

namespace cua_s1::kernels::attention {

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return uint32_t(__cvta_generic_to_shared(pointer));
}

// 16-byte asynchronous global->shared copy to shared address `to`; `valid` false writes zeros.
__device__ __forceinline__ void copy16(uint32_t to, const void* from, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int pending>
__device__ __forceinline__ void copies_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// 2^x on the special-function unit, denormal results flushed to 0 (a probability below 2^-126
// of the row's largest one).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// One online-softmax step of an m16 row tile over `chunks` x 8 keys. `s` holds the raw scores
// (masked ones -inf; the scale > 0 joins in the exponent's FMA); on return it holds
// 2^(scale_log2 s - max), the unnormalised probabilities. The running max (of scaled scores)
// and sum of rows group / group + 8 are updated; `alpha` is what the output rows must be
// multiplied by.
template <int chunks>
__device__ __forceinline__ void softmax_step(float (&s)[chunks][4], float (&running_max)[2],
                                             float (&running_sum)[2], float (&alpha)[2],
                                             float scale_log2) {
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < chunks; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[n][e]);
  float base[2];  // the running max of the scaled scores
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 1));
    tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 2));
    const float new_max = fmaxf(running_max[i], tile_max[i] * scale_log2);
    base[i] = new_max == -INFINITY ? 0.0f : new_max;  // a row that has seen no key yet
    alpha[i] = fast_exp2(running_max[i] - base[i]);
    running_max[i] = new_max;
    running_sum[i] *= alpha[i];
  }
#pragma unroll
  for (int n = 0; n < chunks; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[n][e] = fast_exp2(fmaf(s[n][e], scale_log2, -base[e >> 1]));
      running_sum[e >> 1] += s[n][e];
    }
}

// Multiplies rows group (elements 0, 1) and group + 8 (2, 3) of each chunk by their alpha.
template <int chunks>
__device__ __forceinline__ void rescale_rows(float (&o)[chunks][4], const float (&alpha)[2]) {
#pragma unroll
  for (int d = 0; d < chunks; ++d) {
    o[d][0] *= alpha[0];
    o[d][1] *= alpha[0];
    o[d][2] *= alpha[1];
    o[d][3] *= alpha[1];
  }
}

// Chunks 2 j and 2 j + 1 of the probabilities as the bf16 A fragment of an m16 x k16 product.
template <int chunks>
__device__ __forceinline__ void probability_fragment(const float (&s)[chunks][4], int j,
                                                     uint32_t (&a)[4]) {
  a[0] = pack_bf16(s[2 * j][0], s[2 * j][1]);
  a[1] = pack_bf16(s[2 * j][2], s[2 * j][3]);
  a[2] = pack_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
  a[3] = pack_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
}

// Divides rows `row` and `row` + 8 (run-relative query positions) by their softmax sums and
// stores those below `tokens` to the output of `head` (fp32 or rounded once to bf16).
template <int D>
__device__ __forceinline__ void store_rows(const attention_problem& p, const float (&o)[D / 8][4],
                                           const float (&running_sum)[2], int64_t row,
                                           int64_t tokens, int64_t run_first, int head) {
  const int quad = int(threadIdx.x & 3);
  float inverse[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float sum = running_sum[i];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inverse[i] = 1.0f / sum;
  }
#pragma unroll
  for (int d = 0; d < D / 8; ++d) {
    const int64_t column = int64_t(head) * D + d * 8 + quad * 2;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (row + i * 8 >= tokens) continue;
      const float2 value = make_float2(o[d][2 * i] * inverse[i], o[d][2 * i + 1] * inverse[i]);
      const int64_t out_row = run_first + row + i * 8;
      if (p.out_bf16)
        *reinterpret_cast<__nv_bfloat162*>(p.out_bf16 + out_row * p.ldo + column) =
            __float22bfloat162_rn(value);
      else
        *reinterpret_cast<float2*>(p.out + out_row * p.ldo + column) = value;
    }
  }
}

}  // namespace cua_s1::kernels::attention
