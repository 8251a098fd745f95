// fp32 GEMMs over bf16 weights through OpenBLAS, converting weight panels into a bounded scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model_weights.hpp"

namespace cua_s1::cpu {

// Sets the OpenBLAS thread count (a process-wide setting of the library).
void set_blas_threads(unsigned threads);

// Plain fp32 row-major GEMM: C[m, n] = alpha * A[m, k] * op(B) + beta * C, op(B) = B^T when
// b_transposed (B stored [n, k]) else B (stored [k, n]).
void sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, bool b_transposed, float beta, float* c, int64_t ldc);

// Applies Linear layers in fp32: y = x W^T (+ b) (+ (x A^T) B^T * scale). The bf16 weight is
// widened in row panels of at most `scratch_bytes` (never a full fp32 copy of the model); the
// LoRA pair is applied unmerged in fp32. Not thread-safe (one scratch per instance).
class gemm_engine {
 public:
  explicit gemm_engine(size_t scratch_bytes = size_t(64) << 20, unsigned threads = 1);

  // y[m, out] (row stride ldy) = x[m, in] (row stride ldx) W^T + bias + LoRA.
  void linear(const linear_weights& layer, const float* x, int64_t m, int64_t ldx, float* y,
              int64_t ldy);

  // y[m, n] = x[m, k] W^T for a bf16 or f32 view W [n, k] (no bias, no LoRA).
  void matmul_weight_t(const tensor_view& weight, const float* x, int64_t m, int64_t ldx,
                       float* y, int64_t ldy);

  size_t scratch_floats() const { return scratch_floats_; }

 private:
  size_t scratch_floats_;
  unsigned threads_;
  std::vector<float> panel_;
  std::vector<float> lora_rows_;
};

}  // namespace cua_s1::cpu
