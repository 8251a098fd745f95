// Pixel values from the picture, position-embedding interpolation and vision rotary.
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/vision.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

// One block per patch, threads over the patch row; 32-bit index arithmetic.
__global__ void patchify_kernel(patchify_args a, bf16* out) {
  const uint32_t n = blockIdx.x, plane = a.patch * a.patch, dim = 3 * a.temporal * plane;
  const uint32_t merge_x = n % a.merge, merge_y = (n / a.merge) % a.merge;
  const uint32_t block = n / (a.merge * a.merge), blocks_w = a.grid_w / a.merge;
  const uint32_t y0 = (block / blocks_w * a.merge + merge_y) * a.patch;
  const uint32_t x0 = (block % blocks_w * a.merge + merge_x) * a.patch;
  for (uint32_t e = threadIdx.x; e < dim; e += blockDim.x) {
    const uint32_t c = e / (a.temporal * plane), pixel = e % plane;
    const uint32_t y = y0 + pixel / a.patch, x = x0 + pixel % a.patch;
    const float value = float(a.rgb[(size_t(y) * a.width + x) * 3 + c]);
    out[size_t(n) * dim + e] = to_bf16(__fdiv_rn(__fsub_rn(value, a.mean[c]), a.std[c]));
  }
}

// Grids are (patches, column blocks): no 64-bit division per value.
__global__ void position_kernel(float* x, int64_t hidden, const bf16* table, const int32_t* rows,
                                const float* weights) {
  const int64_t d = int64_t(blockIdx.y) * blockDim.x + threadIdx.x, n = blockIdx.x;
  if (d >= hidden) return;
  float sum = 0;
  for (int tap = 0; tap < 4; ++tap) {
    const float term = to_float(table[int64_t(rows[n * 4 + tap]) * hidden + d]) * weights[n * 4 + tap];
    sum = tap == 0 ? term : sum + term;
  }
  x[n * hidden + d] += sum;
}

__global__ void vision_rotary_kernel(const float* qkv, int64_t hidden, int head_dim,
                                     const float* cos, const float* sin, bf16* out) {
  const int64_t width = 3 * hidden, n = blockIdx.x;
  const int column = int(blockIdx.y * blockDim.x + threadIdx.x);
  if (column >= width) return;
  const int64_t i = n * width + column;
  if (column >= 2 * hidden) {  // v
    out[i] = to_bf16(qkv[i]);
    return;
  }
  const int half = head_dim / 2, d = column % head_dim;
  const int slot = d < half ? d : d - half;
  const float c = cos[n * half + slot], s = sin[n * half + slot];
  const float value = d < half ? qkv[i] * c - qkv[i + half] * s : qkv[i] * c + qkv[i - half] * s;
  out[i] = to_bf16(value);
}

// Four consecutive columns per thread (float4 loads, one 8-byte store); needs hidden and half a
// head multiples of 4.
__global__ void vision_rotary_quad_kernel(const float* qkv, int hidden, int head_dim,
                                          const float* cos, const float* sin, bf16* out) {
  const int width = 3 * hidden, column = 4 * int(blockIdx.y * blockDim.x + threadIdx.x);
  if (column >= width) return;
  const int64_t n = blockIdx.x, i = n * width + column;
  const float4 x = *reinterpret_cast<const float4*>(qkv + i);
  float4 value = x;
  if (column < 2 * hidden) {  // q or k: rotate half
    const int half = head_dim / 2, d = column % head_dim;
    const bool low = d < half;
    const int slot = low ? d : d - half;
    const float4 partner = *reinterpret_cast<const float4*>(qkv + (low ? i + half : i - half));
    const float4 c = *reinterpret_cast<const float4*>(cos + n * half + slot);
    const float4 s = *reinterpret_cast<const float4*>(sin + n * half + slot);
    const float sign = low ? -1.0f : 1.0f;  // low: x c - x[d + half] s; high: x c + x[d - half] s
    value = make_float4(x.x * c.x + sign * (partner.x * s.x), x.y * c.y + sign * (partner.y * s.y),
                        x.z * c.z + sign * (partner.z * s.z), x.w * c.w + sign * (partner.w * s.w));
  }
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(value.x, value.y),
                            __floats2bfloat162_rn(value.z, value.w)};
  *reinterpret_cast<uint2*>(out + i) = *reinterpret_cast<const uint2*>(pair);
}

}  // namespace

void patchify_to_bf16(const patchify_args& args, bf16* out, cudaStream_t stream) {
  const uint32_t patches = args.grid_h * args.grid_w;
  if (patches == 0) return;
  if (args.merge == 0 || args.grid_h % args.merge || args.grid_w % args.merge ||
      args.width != args.grid_w * args.patch || args.temporal == 0)
    throw std::invalid_argument("patchify_to_bf16: the picture does not match the patch grid");
  patchify_kernel<<<patches, 256, 0, stream>>>(args, out);
  check_launch("patchify_to_bf16");
}

void add_position_embedding(float* x, int64_t patches, int64_t hidden, const bf16* table,
                            const int32_t* rows, const float* weights, cudaStream_t stream) {
  if (patches * hidden == 0) return;
  position_kernel<<<dim3(unsigned(patches), blocks_for(hidden, threads)), threads, 0, stream>>>(
      x, hidden, table, rows, weights);
  check_launch("add_position_embedding");
}

void vision_rotary_to_bf16(const float* qkv, int64_t patches, int64_t hidden, int64_t head_dim,
                           const float* cos, const float* sin, bf16* out, cudaStream_t stream) {
  if (patches == 0) return;
  const bool quads = hidden % 4 == 0 && head_dim % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(qkv) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(cos) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(sin) % 16 == 0;
  if (quads)
    vision_rotary_quad_kernel<<<dim3(unsigned(patches), blocks_for(3 * hidden / 4, threads)),
                                threads, 0, stream>>>(qkv, int(hidden), int(head_dim), cos, sin,
                                                      out);
  else
    vision_rotary_kernel<<<dim3(unsigned(patches), blocks_for(3 * hidden, threads)), threads, 0,
                           stream>>>(qkv, hidden, int(head_dim), cos, sin, out);
  check_launch("vision_rotary_to_bf16");
}

}  // namespace cua_s1::kernels
