// Position-embedding interpolation and vision rotary, one thread per output value.
#include "kernels/common.cuh"
#include "kernels/vision.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

__global__ void position_kernel(float* x, int64_t patches, int64_t hidden, const bf16* table,
                                const int32_t* rows, const float* weights) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= patches * hidden) return;
  const int64_t n = i / hidden, d = i % hidden;
  float sum = 0;
  for (int tap = 0; tap < 4; ++tap) {
    const float term = to_float(table[int64_t(rows[n * 4 + tap]) * hidden + d]) * weights[n * 4 + tap];
    sum = tap == 0 ? term : sum + term;
  }
  x[i] += sum;
}

__global__ void vision_rotary_kernel(const float* qkv, int64_t patches, int64_t hidden,
                                     int64_t head_dim, const float* cos, const float* sin,
                                     bf16* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t width = 3 * hidden;
  if (i >= patches * width) return;
  const int64_t n = i / width, column = i % width;
  if (column >= 2 * hidden) {  // v
    out[i] = to_bf16(qkv[i]);
    return;
  }
  const int64_t half = head_dim / 2, d = column % head_dim;
  const int64_t slot = d < half ? d : d - half;
  const float c = cos[n * half + slot], s = sin[n * half + slot];
  const float value = d < half ? qkv[i] * c - qkv[i + half] * s : qkv[i] * c + qkv[i - half] * s;
  out[i] = to_bf16(value);
}

}  // namespace

void add_position_embedding(float* x, int64_t patches, int64_t hidden, const bf16* table,
                            const int32_t* rows, const float* weights, cudaStream_t stream) {
  if (patches * hidden == 0) return;
  position_kernel<<<blocks_for(patches * hidden, threads), threads, 0, stream>>>(
      x, patches, hidden, table, rows, weights);
  check_launch("add_position_embedding");
}

void vision_rotary_to_bf16(const float* qkv, int64_t patches, int64_t hidden, int64_t head_dim,
                           const float* cos, const float* sin, bf16* out, cudaStream_t stream) {
  if (patches == 0) return;
  vision_rotary_kernel<<<blocks_for(patches * 3 * hidden, threads), threads, 0, stream>>>(
      qkv, patches, hidden, head_dim, cos, sin, out);
  check_launch("vision_rotary_to_bf16");
}

}  // namespace cua_s1::kernels
