// Tensor-core products of fp32 operands at about 16 significant bits: each value is split into a
// bf16 high part and a bf16 residual, and A B accumulates (fp32) A_lo B_hi + A_hi B_lo + A_hi B_hi
// with mma.sync m16n8k16 (the dropped A_lo B_lo is 2^-16 of the product). Fragment layouts are
// those of the PTX ISA for m16n8k16 (g = lane / 4, t = lane % 4): A (16 x 16, row-major) a0 =
// (g, 2t..2t+1), a1 = (g + 8, 2t..), a2 = (g, 2t + 8..), a3 = (g + 8, 2t + 8..); B (16 x 8) b0 =
// (k 2t..2t+1, n g), b1 = (k 2t + 8.., n g); C (16 x 8) c0, c1 = (g, 2t..2t+1), c2, c3 = (g + 8, ..).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common.cuh"

namespace cua_s1::kernels {

// A split A fragment; a split B fragment travels as uint4 {hi b0, hi b1, lo b0, lo b1}.
struct a_split {
  uint32_t hi[4], lo[4];
};

struct split_pair {
  uint32_t hi, lo;
};

// (first, second) as bf16x2 high parts and bf16x2 residuals; first in the low half.
__device__ __forceinline__ split_pair split_pair_of(float first, float second) {
  const __nv_bfloat162 hi = __floats2bfloat162_rn(first, second);
  const float2 back = __bfloat1622float2(hi);
  const __nv_bfloat162 lo = __floats2bfloat162_rn(first - back.x, second - back.y);
  return {*reinterpret_cast<const uint32_t*>(&hi), *reinterpret_cast<const uint32_t*>(&lo)};
}

__device__ __forceinline__ uint4 b_of(split_pair b0, split_pair b1) {
  return make_uint4(b0.hi, b1.hi, b0.lo, b1.lo);
}

// The A fragment whose k columns 0..7 are the accumulator tile `low` and 8..15 the tile `high`
// (an m16n8 result reused as the next product's left operand).
__device__ __forceinline__ a_split split_a(const float (&low)[4], const float (&high)[4]) {
  const split_pair p0 = split_pair_of(low[0], low[1]), p1 = split_pair_of(low[2], low[3]);
  const split_pair p2 = split_pair_of(high[0], high[1]), p3 = split_pair_of(high[2], high[3]);
  return {{p0.hi, p1.hi, p2.hi, p3.hi}, {p0.lo, p1.lo, p2.lo, p3.lo}};
}

// The A fragment of rows row0..row0 + 15, columns k0..k0 + 15 of a row-major fp32 matrix.
__device__ __forceinline__ a_split split_a_rows(const float* m, int stride, int row0, int k0) {
  const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
  const float* r0 = m + (row0 + g) * stride + k0 + 2 * t;
  const float* r8 = r0 + 8 * stride;
  const float2 x0 = *reinterpret_cast<const float2*>(r0), x1 = *reinterpret_cast<const float2*>(r8);
  const float2 x2 = *reinterpret_cast<const float2*>(r0 + 8);
  const float2 x3 = *reinterpret_cast<const float2*>(r8 + 8);
  const float low[4] = {x0.x, x0.y, x1.x, x1.y}, high[4] = {x2.x, x2.y, x3.x, x3.y};
  return split_a(low, high);
}

// The B fragment with B(k, n) = m[n0 + n][k0 + k] (k along the rows of m), times scale.
__device__ __forceinline__ uint4 split_b_along_rows(const float* m, int stride, int n0, int k0,
                                                    float scale = 1.0f) {
  const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
  const float* r = m + (n0 + g) * stride + k0 + 2 * t;
  const float2 x = *reinterpret_cast<const float2*>(r), y = *reinterpret_cast<const float2*>(r + 8);
  return b_of(split_pair_of(x.x * scale, x.y * scale), split_pair_of(y.x * scale, y.y * scale));
}

// The B fragment with B(k, n) = m[k0 + k][n0 + n] * k_scale[k0 + k] (k down the columns of m;
// k_scale null: 1).
__device__ __forceinline__ uint4 split_b_down_columns(const float* m, int stride, int n0, int k0,
                                                      const float* k_scale = nullptr) {
  const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
  const int k = k0 + 2 * t;
  const float* c = m + k * stride + n0 + g;
  float e0 = c[0], e1 = c[stride], e8 = c[8 * stride], e9 = c[9 * stride];
  if (k_scale) {
    e0 *= k_scale[k];
    e1 *= k_scale[k + 1];
    e8 *= k_scale[k + 8];
    e9 *= k_scale[k + 9];
  }
  return b_of(split_pair_of(e0, e1), split_pair_of(e8, e9));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d += a b, small terms first.
__device__ __forceinline__ void mma_split(float (&d)[4], const a_split& a, const uint4& b) {
  mma_bf16(d, a.lo, b.x, b.y);
  mma_bf16(d, a.hi, b.z, b.w);
  mma_bf16(d, a.hi, b.x, b.y);
}

}  // namespace cua_s1::kernels
