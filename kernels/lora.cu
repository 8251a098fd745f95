// LoRA kernels: the down projection tiles x and A through shared memory (A is read once per 32
// rows); the up projection keeps a B row per thread in registers across rows.
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/lora.hpp"

namespace cua_s1::kernels {
namespace {

constexpr int down_rows = 32, down_tile = 64, down_threads = 256;

template <int RANK>
__global__ void lora_down_kernel(const bf16* x, int64_t m, int64_t in, int64_t ldx,
                                 const float* a, float* t) {
  __shared__ float xs[down_rows][down_tile + 1];
  __shared__ float as[RANK][down_tile + 1];
  constexpr int outputs = (down_rows * RANK + down_threads - 1) / down_threads;
  float acc[outputs];
#pragma unroll
  for (int o = 0; o < outputs; ++o) acc[o] = 0.0f;
  const int64_t row0 = int64_t(blockIdx.x) * down_rows;
  for (int64_t k0 = 0; k0 < in; k0 += down_tile) {
    for (int i = threadIdx.x; i < down_rows * down_tile; i += down_threads) {
      const int r = i / down_tile, c = i % down_tile;
      const int64_t row = row0 + r, col = k0 + c;
      xs[r][c] = row < m && col < in ? to_float(x[row * ldx + col]) : 0.0f;
    }
    for (int i = threadIdx.x; i < RANK * down_tile; i += down_threads) {
      const int r = i / down_tile, c = i % down_tile;
      const int64_t col = k0 + c;
      as[r][c] = col < in ? a[int64_t(r) * in + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < outputs; ++o) {
      const int index = threadIdx.x + o * down_threads;
      if (index < down_rows * RANK) {
        const int r = index / RANK, k = index % RANK;
        float sum = acc[o];
        for (int c = 0; c < down_tile; ++c) sum += xs[r][c] * as[k][c];
        acc[o] = sum;
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int o = 0; o < outputs; ++o) {
    const int index = threadIdx.x + o * down_threads;
    const int64_t row = row0 + index / RANK;
    if (index < down_rows * RANK && row < m) t[row * RANK + index % RANK] = acc[o];
  }
}

constexpr int up_rows = 16, up_threads = 256;

template <int RANK>
__global__ void lora_up_kernel(const float* t, int64_t m, const float* b, int64_t out, float scale,
                               float* y, int64_t ldy) {
  const int64_t col = int64_t(blockIdx.x) * up_threads + threadIdx.x;
  if (col >= out) return;
  float weights[RANK];
#pragma unroll
  for (int k = 0; k < RANK; ++k) weights[k] = b[col * RANK + k];
  const int64_t row_end = min(m, int64_t(blockIdx.y + 1) * up_rows);
  for (int64_t row = int64_t(blockIdx.y) * up_rows; row < row_end; ++row) {
    float sum = 0;
#pragma unroll
    for (int k = 0; k < RANK; ++k) sum += t[row * RANK + k] * weights[k];
    y[row * ldy + col] += sum * scale;
  }
}

template <int RANK>
void launch_lora(const bf16* x, int64_t m, int64_t in, int64_t ldx, const float* a, float* t,
                 cudaStream_t stream) {
  lora_down_kernel<RANK><<<blocks_for(m, down_rows), down_threads, 0, stream>>>(x, m, in, ldx, a, t);
}

template <int RANK>
void launch_lora_up(const float* t, int64_t m, const float* b, int64_t out, float scale, float* y,
                    int64_t ldy, cudaStream_t stream) {
  const dim3 grid(blocks_for(out, up_threads), blocks_for(m, up_rows));
  lora_up_kernel<RANK><<<grid, up_threads, 0, stream>>>(t, m, b, out, scale, y, ldy);
}

}  // namespace

void lora_down(const bf16* x, int64_t m, int64_t in, int64_t ldx, const float* a, int64_t rank,
               float* t, cudaStream_t stream) {
  if (m == 0) return;
  switch (rank) {
    case 8: launch_lora<8>(x, m, in, ldx, a, t, stream); break;
    case 16: launch_lora<16>(x, m, in, ldx, a, t, stream); break;
    case 32: launch_lora<32>(x, m, in, ldx, a, t, stream); break;
    case 64: launch_lora<64>(x, m, in, ldx, a, t, stream); break;
    default: throw std::invalid_argument("lora_down: rank must be 8, 16, 32 or 64");
  }
  check_launch("lora_down");
}

void lora_up_add(const float* t, int64_t m, int64_t rank, const float* b, int64_t out, float scale,
                 float* y, int64_t ldy, cudaStream_t stream) {
  if (m == 0) return;
  switch (rank) {
    case 8: launch_lora_up<8>(t, m, b, out, scale, y, ldy, stream); break;
    case 16: launch_lora_up<16>(t, m, b, out, scale, y, ldy, stream); break;
    case 32: launch_lora_up<32>(t, m, b, out, scale, y, ldy, stream); break;
    case 64: launch_lora_up<64>(t, m, b, out, scale, y, ldy, stream); break;
    default: throw std::invalid_argument("lora_up_add: rank must be 8, 16, 32 or 64");
  }
  check_launch("lora_up_add");
}

}  // namespace cua_s1::kernels
