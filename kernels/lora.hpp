// The unmerged fp32 LoRA branch of a Linear, y += scale * (x A^T) B^T with x the bf16 GEMM input,
// on tensor cores without losing fp32 accuracy: A is split once into three bf16 matrices with
// A = A_hi + A_mid + A_lo exactly, so x A^T is three exact-product bf16 GEMMs (one cuBLASLt call
// over [A_hi; A_mid; A_lo]) accumulated in fp32; the up projection runs on CUDA cores in fp32,
// fused with the consumer of the Linear's output (an add, or a GELU to bf16), or rides in the base
// product as extra columns (lora_fold_weight / lora_fold_input, the vision MLP).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// split[3 * rows, cols] = [A_hi; A_mid; A_lo] of a[rows, cols] (fp32): A_hi = bf16(a),
// A_mid = bf16(a - A_hi), A_lo = bf16(a - A_hi - A_mid); their sum is a, exactly (finite a).
void lora_split(const float* a, int64_t rows, int64_t cols, __nv_bfloat16* split,
                cudaStream_t stream);

// What the up projection does with y + delta, delta[m, out] = scale * t[m, rank] B[out, rank]^T
// where t = (t_hi + (t_mid + t_lo)), the three rank-wide column groups of `parts` [m, 3 * rank]
// (row stride ldp), i.e. the product of x with the split A.
enum class lora_epilogue {
  add,        // y (fp32, row stride ldy) += delta
  gelu_tanh,  // out[m, out] = bf16(gelu_tanh(y + delta)), y read only
  gelu_erf,   // out[m, out] = bf16(gelu_erf(y + delta))
};
void lora_up(const float* parts, int64_t ldp, int64_t m, int64_t rank, const float* b, int64_t out,
             float scale, lora_epilogue epilogue, float* y, int64_t ldy, __nv_bfloat16* out_bf16,
             cudaStream_t stream);

// The up projection folded into the base product (vision MLP): the weight gets 3 rank extra
// columns [s B_hi | s B_lo | s B_hi] (B_hi = bf16(s B) / s, B_lo the bf16 rest; s = scale) and
// the input the matching [t_hi | t_hi | t_mid] (t_hi = bf16(t), t_mid = bf16(t - t_hi)), so one
// product over in + 3 rank columns adds s t B^T at about 16 significant bits (the dropped
// t_mid B_lo is 2^-16 of the branch), accumulated in fp32 with the base product.
// lora_fold_weight fills columns in .. in + 3 rank of w's rows (row stride ldw) from b[out, rank].
void lora_fold_weight(__nv_bfloat16* w, int64_t out, int64_t ldw, int64_t in, const float* b,
                      int64_t rank, float scale, cudaStream_t stream);
// lora_fold_input fills columns in .. in + 3 rank of x's rows (row stride ldx) from the down
// projection's parts [m, 3 rank] (row stride 3 rank; t as lora_up sums it).
void lora_fold_input(const float* parts, int64_t m, int64_t rank, __nv_bfloat16* x, int64_t ldx,
                     int64_t in, cudaStream_t stream);

// Merges a LoRA pair into its bf16 weight in place:
// w[o, i] = bf16(w[o, i] + scale * sum_r b[o, r] a[r, i]), the sum and the add in fp32.
void lora_merge(__nv_bfloat16* w, int64_t out, int64_t in, const float* a, const float* b,
                int64_t rank, float scale, cudaStream_t stream);

}  // namespace cua_s1::kernels
