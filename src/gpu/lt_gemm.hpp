// Row-major bf16 x bf16 -> fp32 matrix products through cuBLASLt (fp32 accumulation, no TF32,
// optional fp32 bias in the epilogue), with a cache of one heuristic algorithm per shape, so a
// shape always runs the same algorithm.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace cua_s1::gpu {

// C[m, n] = alpha * A[m, k] op(B) + beta * C, all row-major with leading dimensions in elements.
// op(B) = B^T with B stored [n, k] when b_transposed (a Linear weight), else B stored [k, n].
// batch > 1 runs `batch` products, matrix i at A + i * stride_a (likewise B, C).
struct gemm_call {
  int64_t m = 0, n = 0, k = 0;
  const __nv_bfloat16* a = nullptr;
  int64_t lda = 0;
  const __nv_bfloat16* b = nullptr;
  int64_t ldb = 0;
  bool b_transposed = true;
  float* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  // C[i, j] += bias[j] in the epilogue, after the product and beta C (fp32, n values).
  const float* bias = nullptr;
  // Set instead of c (beta 0, no fp32 bias): D[i, j] = tanh-GELU(A op(B) + gelu_bias[j]) computed
  // on the fp32 accumulator and rounded once to bf16; gelu_bias (bf16, n values) may be null.
  __nv_bfloat16* gelu_out = nullptr;
  const __nv_bfloat16* gelu_bias = nullptr;
  // Set instead of c (beta 0, no bias, no GELU): D = A op(B) rounded once to bf16.
  __nv_bfloat16* bf16_out = nullptr;
  int32_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

class lt_gemm {
 public:
  explicit lt_gemm(size_t workspace_bytes = size_t(32) << 20);
  ~lt_gemm();
  lt_gemm(const lt_gemm&) = delete;
  lt_gemm& operator=(const lt_gemm&) = delete;

  // Returns false when call.bias was given but no algorithm takes a bias epilogue for this
  // shape: the product ran without it and the caller adds the bias. With call.gelu_out, false
  // means no algorithm takes the GELU epilogue and nothing ran.
  [[nodiscard]] bool run(const gemm_call& call, cudaStream_t stream);

  // Shorthand for a Linear layer: y[m, n] (ldy) (+)= x[m, k] (ldx) W[n, k]^T (+ bias), the
  // bias added here or by a separate kernel when the epilogue cannot take it.
  void linear(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
              const __nv_bfloat16* weight, int64_t n, float* y, int64_t ldy, bool accumulate,
              cudaStream_t stream, const float* bias = nullptr);

  // y[m, n] (ldy, bf16) = tanh-GELU(x[m, k] W[n, k]^T + bias) in the product's epilogue; false
  // (nothing ran) when no algorithm takes that epilogue for this shape.
  [[nodiscard]] bool linear_gelu(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                                 const __nv_bfloat16* weight, int64_t n, __nv_bfloat16* y,
                                 int64_t ldy, const __nv_bfloat16* bias, cudaStream_t stream);

  // y[m, n] (ldy, bf16) = x[m, k] W[n, k]^T, the fp32 accumulator rounded once.
  void linear_to_bf16(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                      const __nv_bfloat16* weight, int64_t n, __nv_bfloat16* y, int64_t ldy,
                      cudaStream_t stream);

  size_t plans() const { return plans_.size(); }

  // The heuristic's first `max` algorithms for the call's shape and epilogue, best first (run()
  // uses the first), and a run with one of them instead: what bench/gemm_bench.cpp compares.
  std::vector<cublasLtMatmulAlgo_t> algorithms(const gemm_call& call, int max);
  [[nodiscard]] bool run(const gemm_call& call, const cublasLtMatmulAlgo_t* algo,
                         cudaStream_t stream);

 private:
  struct plan;
  using key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int32_t,
                         int64_t, int64_t, int64_t, int, int, int, bool, bool, bool, bool, bool>;
  const plan& plan_for(const gemm_call& call);
  int heuristic_results(const plan& p, cublasLtMatmulHeuristicResult_t* results, int max);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_;
  std::map<key, std::unique_ptr<plan>> plans_;
};

}  // namespace cua_s1::gpu
