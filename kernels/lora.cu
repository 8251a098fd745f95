// LoRA kernels: the down projection tiles x and A through shared memory (A is read once per 32
// rows); the up projection keeps a B row per thread in registers across rows.
#include <algorithm>
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/lora.hpp"

namespace cua_s1::kernels {
namespace {

constexpr int down_rows = 32, down_tile = 64, down_threads = 256;

constexpr int64_t split_width = 512;  // input columns per block (8 tiles)

template <int RANK>
__global__ void lora_down_kernel(const bf16* x, int64_t m, int64_t in, int64_t ldx,
                                 const float* a, float* partial) {
  __shared__ float xs[down_rows][down_tile + 1];
  __shared__ float as[RANK][down_tile + 1];
  constexpr int outputs = (down_rows * RANK + down_threads - 1) / down_threads;
  float acc[outputs];
#pragma unroll
  for (int o = 0; o < outputs; ++o) acc[o] = 0.0f;
  const int64_t row0 = int64_t(blockIdx.x) * down_rows;
  const int64_t k_begin = int64_t(blockIdx.y) * split_width;
  const int64_t k_end = min(in, k_begin + split_width);
  float* t = partial + int64_t(blockIdx.y) * m * RANK;
  for (int64_t k0 = k_begin; k0 < k_end; k0 += down_tile) {
    for (int i = threadIdx.x; i < down_rows * down_tile; i += down_threads) {
      const int r = i / down_tile, c = i % down_tile;
      const int64_t row = row0 + r, col = k0 + c;
      xs[r][c] = row < m && col < k_end ? to_float(x[row * ldx + col]) : 0.0f;
    }
    for (int i = threadIdx.x; i < RANK * down_tile; i += down_threads) {
      const int r = i / down_tile, c = i % down_tile;
      const int64_t col = k0 + c;
      as[r][c] = col < k_end ? a[int64_t(r) * in + col] : 0.0f;
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

// t[row, k] = sum over the splits in order (one thread per value).
__global__ void lora_reduce_kernel(float* partial, int64_t splits, int64_t count) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float sum = partial[i];
  for (int64_t s = 1; s < splits; ++s) sum += partial[s * count + i];
  partial[i] = sum;
}

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
void launch_lora(const bf16* x, int64_t m, int64_t in, int64_t ldx, const float* a, float* partial,
                 cudaStream_t stream) {
  const dim3 grid(blocks_for(m, down_rows), unsigned(lora_down_splits(in)));
  lora_down_kernel<RANK><<<grid, down_threads, 0, stream>>>(x, m, in, ldx, a, partial);
}

template <int RANK>
void launch_lora_up(float* partial, int64_t splits, int64_t m, const float* b, int64_t out,
                    float scale, float* y, int64_t ldy, cudaStream_t stream) {
  if (splits > 1)
    lora_reduce_kernel<<<blocks_for(m * RANK, 256), 256, 0, stream>>>(partial, splits, m * RANK);
  const dim3 grid(blocks_for(out, up_threads), blocks_for(m, up_rows));
  lora_up_kernel<RANK><<<grid, up_threads, 0, stream>>>(partial, m, b, out, scale, y, ldy);
}

__global__ void lora_merge_kernel(bf16* w, int64_t out, int64_t in, const float* a, const float* b,
                                  int64_t rank, float scale) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out * in) return;
  const int64_t o = i / in, c = i % in;
  float delta = 0;
  for (int64_t r = 0; r < rank; ++r) delta += b[o * rank + r] * a[r * in + c];
  w[i] = to_bf16(to_float(w[i]) + scale * delta);
}

}  // namespace

void lora_merge(bf16* w, int64_t out, int64_t in, const float* a, const float* b, int64_t rank,
                float scale, cudaStream_t stream) {
  if (out * in == 0) return;
  lora_merge_kernel<<<blocks_for(out * in, 256), 256, 0, stream>>>(w, out, in, a, b, rank, scale);
  check_launch("lora_merge");
}

int64_t lora_down_splits(int64_t in) { return std::max<int64_t>(1, (in + split_width - 1) / split_width); }

void lora_down(const bf16* x, int64_t m, int64_t in, int64_t ldx, const float* a, int64_t rank,
               float* t, cudaStream_t stream) {  // t: the partial sums
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

void lora_up_add(float* t, int64_t splits, int64_t m, int64_t rank, const float* b,
                 int64_t out, float scale, float* y, int64_t ldy, cudaStream_t stream) {
  if (m == 0) return;
  switch (rank) {
    case 8: launch_lora_up<8>(t, splits, m, b, out, scale, y, ldy, stream); break;
    case 16: launch_lora_up<16>(t, splits, m, b, out, scale, y, ldy, stream); break;
    case 32: launch_lora_up<32>(t, splits, m, b, out, scale, y, ldy, stream); break;
    case 64: launch_lora_up<64>(t, splits, m, b, out, scale, y, ldy, stream); break;
    default: throw std::invalid_argument("lora_up_add: rank must be 8, 16, 32 or 64");
  }
  check_launch("lora_up_add");
}

}  // namespace cua_s1::kernels
