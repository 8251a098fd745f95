// The unmerged fp32 LoRA branch of a Linear: y += scale * (x A^T) B^T, x the bf16 GEMM input.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// The down projection is split over the input dimension into this many partial sums (each
// block then runs a short loop; the sums are added in a fixed order, so results are
// deterministic).
int64_t lora_down_splits(int64_t in);

// partial[s, m, rank] = x[m, in_s] A[rank, in_s]^T over split s of the input dimension
// (lora_down_splits(in) splits), x bf16 (row stride ldx, widened exactly), A fp32.
void lora_down(const __nv_bfloat16* x, int64_t m, int64_t in, int64_t ldx, const float* a,
               int64_t rank, float* partial, cudaStream_t stream);

// y[m, out] (row stride ldy) += scale * t[m, rank] B[out, rank]^T with t = the sum of the
// `splits` partial products in split order (reduced in place into split 0), fp32.
void lora_up_add(float* partial, int64_t splits, int64_t m, int64_t rank, const float* b,
                 int64_t out, float scale, float* y, int64_t ldy, cudaStream_t stream);

// Merges a LoRA pair into its bf16 weight in place:
// w[o, i] = bf16(w[o, i] + scale * sum_r b[o, r] a[r, i]), the sum and the add in fp32.
void lora_merge(__nv_bfloat16* w, int64_t out, int64_t in, const float* a, const float* b,
                int64_t rank, float scale, cudaStream_t stream);

}  // namespace cua_s1::kernels
