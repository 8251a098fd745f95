// The unmerged fp32 LoRA branch of a Linear: y += scale * (x A^T) B^T, x the bf16 GEMM input.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// t[m, rank] = x[m, in] (bf16, row stride ldx, widened exactly) A[rank, in]^T, fp32.
void lora_down(const __nv_bfloat16* x, int64_t m, int64_t in, int64_t ldx, const float* a,
               int64_t rank, float* t, cudaStream_t stream);

// y[m, out] (row stride ldy) += scale * t[m, rank] B[out, rank]^T, fp32.
void lora_up_add(const float* t, int64_t m, int64_t rank, const float* b, int64_t out, float scale,
                 float* y, int64_t ldy, cudaStream_t stream);

}  // namespace cua_s1::kernels
