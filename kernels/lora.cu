// LoRA kernels: the exact three-way bf16 split of A (for the tensor-core down projection), the
// fp32 up projection fused with its epilogue (B rows in registers, t rows in shared memory), the
// extra columns of a base product that folds the up projection in, and the merge into a bf16
// weight.
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/lora.hpp"

namespace cua_s1::kernels {
namespace {

__global__ void lora_split_kernel(const float* a, int64_t count, bf16* split) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float value = a[i];
  const bf16 hi = to_bf16(value);
  const float rest = value - to_float(hi);  // exact: hi is value rounded to 8 significant bits
  const bf16 mid = to_bf16(rest);
  split[i] = hi;
  split[count + i] = mid;
  split[2 * count + i] = to_bf16(rest - to_float(mid));  // exact difference, at most 8 bits left
}

constexpr int up_rows = 16, up_threads = 256;

template <int RANK, lora_epilogue E>
__global__ void __launch_bounds__(up_threads)
    lora_up_kernel(const float* parts, int64_t ldp, int64_t m, const float* b, int64_t out,
                   float scale, float* y, int64_t ldy, bf16* out_bf16) {
  __shared__ __align__(16) float t[up_rows][RANK];
  // The block's B rows, staged by coalesced loads (a thread reading its own row straight from
  // global memory would touch a separate sector per value); rows padded against bank conflicts.
  // (Rank 64 would pass the 48 KB of static shared memory: those rows come from global memory.)
  constexpr bool staged = RANK <= 32;
  __shared__ __align__(16) float b_s[staged ? up_threads : 1][RANK + 4];
  const int64_t row0 = int64_t(blockIdx.y) * up_rows, col0 = int64_t(blockIdx.x) * up_threads;
  for (int i = threadIdx.x; i < up_rows * RANK; i += up_threads) {
    const int r = i / RANK, k = i % RANK;
    const float* p = parts + (row0 + r) * ldp + k;
    t[r][k] = row0 + r < m ? p[0] + (p[RANK] + p[2 * RANK]) : 0.0f;
  }
  if constexpr (staged)
    for (int i = threadIdx.x; i < up_threads * RANK; i += up_threads) {
      const int c = i / RANK, k = i % RANK;
      b_s[c][k] = col0 + c < out ? b[(col0 + c) * RANK + k] : 0.0f;
    }
  __syncthreads();
  const int64_t col = col0 + threadIdx.x;
  if (col >= out) return;
  float weights[RANK];
#pragma unroll
  for (int k = 0; k < RANK; ++k) weights[k] = staged ? b_s[staged ? threadIdx.x : 0][k] : b[col * RANK + k];
  const int rows = int(min(int64_t(up_rows), m - row0));
  float before[up_rows];  // y of every row, loaded together rather than one latency per row
#pragma unroll
  for (int r = 0; r < up_rows; ++r) before[r] = r < rows ? y[(row0 + r) * ldy + col] : 0.0f;
#pragma unroll
  for (int r = 0; r < up_rows; ++r) {
    if (r >= rows) break;
    float sum = 0;
#pragma unroll
    for (int k = 0; k < RANK; k += 4) {  // one 16-byte shared load per four products
      const float4 tk = *reinterpret_cast<const float4*>(&t[r][k]);
      sum += tk.x * weights[k];
      sum += tk.y * weights[k + 1];
      sum += tk.z * weights[k + 2];
      sum += tk.w * weights[k + 3];
    }
    const int64_t row = row0 + r;
    const float value = before[r] + sum * scale;
    if constexpr (E == lora_epilogue::add)
      y[row * ldy + col] = value;
    else if constexpr (E == lora_epilogue::gelu_tanh)
      out_bf16[row * out + col] = to_bf16(gelu_tanh_f(value));
    else
      out_bf16[row * out + col] = to_bf16(gelu_erf_f(value));
  }
}

template <int RANK>
void launch_up(const float* parts, int64_t ldp, int64_t m, const float* b, int64_t out,
               float scale, lora_epilogue epilogue, float* y, int64_t ldy, bf16* out_bf16,
               cudaStream_t stream) {
  // Row blocks go on the grid's y axis (at most 65535): taller inputs in slices of that many.
  constexpr int64_t slice = int64_t(65535) * up_rows;
  for (int64_t first = 0; first < m; first += slice) {
    const int64_t rows = m - first < slice ? m - first : slice;
    const float* p = parts + first * ldp;
    float* y_rows = y ? y + first * ldy : nullptr;
    bf16* out_rows = out_bf16 ? out_bf16 + first * out : nullptr;
    const dim3 grid(blocks_for(out, up_threads), blocks_for(rows, up_rows));
    switch (epilogue) {
      case lora_epilogue::add:
        lora_up_kernel<RANK, lora_epilogue::add>
            <<<grid, up_threads, 0, stream>>>(p, ldp, rows, b, out, scale, y_rows, ldy, out_rows);
        break;
      case lora_epilogue::gelu_tanh:
        lora_up_kernel<RANK, lora_epilogue::gelu_tanh>
            <<<grid, up_threads, 0, stream>>>(p, ldp, rows, b, out, scale, y_rows, ldy, out_rows);
        break;
      case lora_epilogue::gelu_erf:
        lora_up_kernel<RANK, lora_epilogue::gelu_erf>
            <<<grid, up_threads, 0, stream>>>(p, ldp, rows, b, out, scale, y_rows, ldy, out_rows);
        break;
    }
  }
}

// hi = bf16(v) and rest = bf16(v - hi), v - hi exact in fp32.
__device__ __forceinline__ void split_two(float v, bf16& hi, bf16& rest) {
  hi = to_bf16(v);
  rest = to_bf16(v - to_float(hi));
}

__global__ void lora_fold_weight_kernel(bf16* w, int64_t out, int64_t ldw, int64_t in,
                                        const float* b, int rank, float scale) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out * rank) return;
  const int64_t o = i / rank;
  const int r = int(i % rank);
  bf16 hi, lo;
  split_two(scale * b[i], hi, lo);
  bf16* row = w + o * ldw + in;
  row[r] = hi;
  row[rank + r] = lo;
  row[2 * rank + r] = hi;
}

__global__ void lora_fold_input_kernel(const float* parts, int64_t m, int rank, bf16* x,
                                       int64_t ldx, int64_t in) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * rank) return;
  const int64_t row = i / rank;
  const int r = int(i % rank);
  const float* p = parts + row * 3 * rank + r;
  bf16 hi, mid;
  split_two(p[0] + (p[rank] + p[2 * rank]), hi, mid);
  bf16* target = x + row * ldx + in;
  target[r] = hi;
  target[rank + r] = hi;
  target[2 * rank + r] = mid;
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

void lora_split(const float* a, int64_t rows, int64_t cols, bf16* split, cudaStream_t stream) {
  const int64_t count = rows * cols;
  if (count == 0) return;
  lora_split_kernel<<<blocks_for(count, 256), 256, 0, stream>>>(a, count, split);
  check_launch("lora_split");
}

void lora_up(const float* parts, int64_t ldp, int64_t m, int64_t rank, const float* b, int64_t out,
             float scale, lora_epilogue epilogue, float* y, int64_t ldy, bf16* out_bf16,
             cudaStream_t stream) {
  if (m == 0) return;
  switch (rank) {
    case 8: launch_up<8>(parts, ldp, m, b, out, scale, epilogue, y, ldy, out_bf16, stream); break;
    case 16: launch_up<16>(parts, ldp, m, b, out, scale, epilogue, y, ldy, out_bf16, stream); break;
    case 32: launch_up<32>(parts, ldp, m, b, out, scale, epilogue, y, ldy, out_bf16, stream); break;
    case 64: launch_up<64>(parts, ldp, m, b, out, scale, epilogue, y, ldy, out_bf16, stream); break;
    default: throw std::invalid_argument("lora_up: rank must be 8, 16, 32 or 64");
  }
  check_launch("lora_up");
}

void lora_fold_weight(bf16* w, int64_t out, int64_t ldw, int64_t in, const float* b, int64_t rank,
                      float scale, cudaStream_t stream) {
  if (out * rank == 0) return;
  lora_fold_weight_kernel<<<blocks_for(out * rank, 256), 256, 0, stream>>>(w, out, ldw, in, b,
                                                                           int(rank), scale);
  check_launch("lora_fold_weight");
}

void lora_fold_input(const float* parts, int64_t m, int64_t rank, bf16* x, int64_t ldx, int64_t in,
                     cudaStream_t stream) {
  if (m * rank == 0) return;
  lora_fold_input_kernel<<<blocks_for(m * rank, 256), 256, 0, stream>>>(parts, m, int(rank), x,
                                                                        ldx, in);
  check_launch("lora_fold_input");
}

void lora_merge(bf16* w, int64_t out, int64_t in, const float* a, const float* b, int64_t rank,
                float scale, cudaStream_t stream) {
  if (out * in == 0) return;
  lora_merge_kernel<<<blocks_for(out * in, 256), 256, 0, stream>>>(w, out, in, a, b, rank, scale);
  check_launch("lora_merge");
}

}  // namespace cua_s1::kernels
