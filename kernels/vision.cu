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

// In place on a bf16 qkv [patches, 3 hidden]: a thread takes four low columns d..d+3 (d < half)
// of one q or k head and their partners d+half.., reading all eight before writing them back
// rotated (fp32 math, one rounding); v is not touched.
__global__ void vision_rotary_in_place_kernel(bf16* qkv, int hidden, int head_dim,
                                              const float* cos, const float* sin, bool quads) {
  const int half = head_dim / 2, per = quads ? 4 : 1;
  const int item = int(blockIdx.y * blockDim.x + threadIdx.x);  // over 2 hidden / 2 low columns
  if (item * per >= hidden) return;
  const int low_index = item * per, head = low_index / half, d = low_index % half;
  const int64_t n = blockIdx.x, base = n * 3 * hidden + int64_t(head) * head_dim + d;
  const float* c = cos + n * half + d;
  const float* s = sin + n * half + d;
  float lo[4], hi[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < per) lo[j] = to_float(qkv[base + j]), hi[j] = to_float(qkv[base + half + j]);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < per) {
      qkv[base + j] = to_bf16(lo[j] * c[j] - hi[j] * s[j]);
      qkv[base + half + j] = to_bf16(hi[j] * c[j] + lo[j] * s[j]);
    }
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

void vision_rotary_in_place(bf16* qkv, int64_t patches, int64_t hidden, int64_t head_dim,
                            const float* cos, const float* sin, cudaStream_t stream) {
  if (patches == 0) return;
  const bool quads = (head_dim / 2) % 4 == 0;
  const int64_t items = quads ? hidden / 4 : hidden;  // q and k: 2 hidden columns, half of them low
  vision_rotary_in_place_kernel<<<dim3(unsigned(patches), blocks_for(items, threads)), threads, 0,
                                  stream>>>(qkv, int(hidden), int(head_dim), cos, sin, quads);
  check_launch("vision_rotary_in_place");
}

}  // namespace cua_s1::kernels
