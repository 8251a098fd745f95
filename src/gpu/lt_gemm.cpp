// cuBLASLt plans: the row-major product C = A op(B) is run as the column-major C^T = op(B)^T A^T.
#include "gpu/lt_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/json_log.hpp"
#include "gpu/cuda_check.hpp"
#include "kernels/elementwise.hpp"

namespace cua_s1::gpu {
namespace {

// Largest power of two (at most 256) that divides the address: what the algorithm may assume.
int alignment_of(const void* pointer, int64_t stride_bytes) {
  auto address = reinterpret_cast<uintptr_t>(pointer) | uintptr_t(stride_bytes);
  int alignment = 256;
  while (alignment > 1 && address % uintptr_t(alignment) != 0) alignment /= 2;
  return alignment;
}

void set_layout_batch(cublasLtMatrixLayout_t layout, int32_t batch, int64_t stride) {
  if (batch <= 1) return;
  check_cublas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &batch, sizeof batch),
               "cublasLtMatrixLayoutSetAttribute(batch)");
  check_cublas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride),
               "cublasLtMatrixLayoutSetAttribute(stride)");
}

}  // namespace

struct lt_gemm::plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool bias_epilogue = false;  // the algorithm adds the bias (set per call: the pointer)
  bool runnable = true;        // false: a GELU epilogue no algorithm takes
  ~plan() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

lt_gemm::lt_gemm(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
  check_cuda(cudaMalloc(&workspace_, workspace_bytes_), "cudaMalloc (cuBLASLt workspace)");
}

lt_gemm::~lt_gemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

const lt_gemm::plan& lt_gemm::plan_for(const gemm_call& call) {
  const int align_a = alignment_of(call.a, (call.lda | call.stride_a) * 2);
  const int align_b = alignment_of(call.b, (call.ldb | call.stride_b) * 2);
  const bool gelu = call.gelu_out != nullptr;
  const bool narrow = gelu || call.bf16_out;  // D in bf16
  const int align_c = narrow ? alignment_of(gelu ? call.gelu_out : call.bf16_out,
                                            (call.ldc | call.stride_c) * 2)
                             : alignment_of(call.c, (call.ldc | call.stride_c) * 4);
  const key id{call.m,        call.n,        call.k,        call.lda,     call.ldb,
               call.ldc,      call.b_transposed, call.batch, call.stride_a, call.stride_b,
               call.stride_c, align_a,       align_b,       align_c,      call.beta != 0.0f,
               call.bias != nullptr, gelu, call.gelu_bias != nullptr, narrow};
  auto found = plans_.find(id);
  if (found != plans_.end()) return *found->second;

  auto p = std::make_unique<plan>();
  check_cublas(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate");
  const cublasOperation_t op_first = call.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                              sizeof op_first),
               "cublasLtMatmulDescSetAttribute(TRANSA)");
  check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                              sizeof op_second),
               "cublasLtMatmulDescSetAttribute(TRANSB)");
  // First operand: B seen column-major (k x n when stored [n, k], n x k when stored [k, n]).
  const uint64_t first_rows = call.b_transposed ? call.k : call.n;
  const uint64_t first_cols = call.b_transposed ? call.n : call.k;
  check_cublas(cublasLtMatrixLayoutCreate(&p->first, CUDA_R_16BF, first_rows, first_cols, call.ldb),
               "cublasLtMatrixLayoutCreate(B)");
  check_cublas(cublasLtMatrixLayoutCreate(&p->second, CUDA_R_16BF, call.k, call.m, call.lda),
               "cublasLtMatrixLayoutCreate(A)");
  check_cublas(cublasLtMatrixLayoutCreate(&p->out, narrow ? CUDA_R_16BF : CUDA_R_32F, call.n, call.m,
                                          call.ldc),
               "cublasLtMatrixLayoutCreate(C)");
  set_layout_batch(p->first, call.batch, call.stride_b);
  set_layout_batch(p->second, call.batch, call.stride_a);
  set_layout_batch(p->out, call.batch, call.stride_c);

  check_cublas(cublasLtMatmulPreferenceCreate(&p->preference), "cublasLtMatmulPreferenceCreate");
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value, const char* what) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(p->preference, attribute, &value, sizeof value),
                 what);
  };
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(workspace_bytes_), "workspace preference");
  // The first operand is B, the second A (column-major view); C and D are the same buffer.
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(align_b), "alignment preference (B)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(align_a), "alignment preference (A)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(align_c), "alignment preference (C)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(align_c), "alignment preference (D)");
  auto heuristic = [&](cublasLtMatmulHeuristicResult_t& result) {
    return heuristic_results(*p, &result, 1) > 0;
  };
  cublasLtMatmulHeuristicResult_t result{};
  bool have_algorithm = false;
  if (gelu) {  // the bias (bf16 like D) runs along C's rows
    const cublasLtEpilogue_t epilogue =
        call.gelu_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                sizeof epilogue),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    p->bias_epilogue = call.gelu_bias != nullptr;
    p->runnable = heuristic(result);
    if (p->runnable)
      p->algo = result.algo;
    else  // the caller runs the product and the GELU apart: slower, same accuracy
      log_event(log_level::warning, "gemm_gelu_epilogue_unavailable",
                {{"m", call.m}, {"n", call.n}, {"k", call.k}});
    return *plans_.emplace(id, std::move(p)).first->second;
  }
  if (call.bias) {  // the bias vector runs along C's rows here: n values, fp32 like C
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                sizeof epilogue),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    have_algorithm = p->bias_epilogue = heuristic(result);
    if (!have_algorithm) {
      const cublasLtEpilogue_t plain = CUBLASLT_EPILOGUE_DEFAULT;
      check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &plain,
                                                  sizeof plain),
                   "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    }
  }
  if (!have_algorithm) have_algorithm = heuristic(result);
  if (!have_algorithm)
    throw cuda_error("cuBLASLt: no algorithm for a " + std::to_string(call.m) + "x" +
                         std::to_string(call.n) + "x" + std::to_string(call.k) + " product",
                     false);
  p->algo = result.algo;
  return *plans_.emplace(id, std::move(p)).first->second;
}

int lt_gemm::heuristic_results(const plan& p, cublasLtMatmulHeuristicResult_t* results, int max) {
  int found_count = 0;
  check_cublas(cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.first, p.second, p.out, p.out,
                                              p.preference, max, results, &found_count),
               "cublasLtMatmulAlgoGetHeuristic");
  return found_count;
}

std::vector<cublasLtMatmulAlgo_t> lt_gemm::algorithms(const gemm_call& call, int max) {
  const plan& p = plan_for(call);
  std::vector<cublasLtMatmulHeuristicResult_t> results(size_t(std::max(max, 1)));
  const int found = p.runnable ? heuristic_results(p, results.data(), int(results.size())) : 0;
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i) algos.push_back(results[size_t(i)].algo);
  return algos;
}

bool lt_gemm::run(const gemm_call& call, cudaStream_t stream) { return run(call, nullptr, stream); }

bool lt_gemm::run(const gemm_call& call, const cublasLtMatmulAlgo_t* algo, cudaStream_t stream) {
  if (call.m == 0 || call.n == 0) return true;
  const bool gelu = call.gelu_out != nullptr;
  if (gelu && (call.beta != 0.0f || call.bias))
    throw std::logic_error("lt_gemm: a GELU product takes neither beta nor an fp32 bias");
  if (call.bf16_out && (gelu || call.beta != 0.0f || call.bias))
    throw std::logic_error("lt_gemm: a bf16 product takes no GELU, beta or bias");
  const plan& p = plan_for(call);
  if (!p.runnable) return false;
  if (p.bias_epilogue) {
    const void* bias = gelu ? static_cast<const void*>(call.gelu_bias) : call.bias;
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias),
                 "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  void* out = gelu ? static_cast<void*>(call.gelu_out)
                   : call.bf16_out ? static_cast<void*>(call.bf16_out) : call.c;
  // C^T[n, m] = op(B)^T[n, k] A^T[k, m] in column-major terms.
  check_cublas(cublasLtMatmul(handle_, p.desc, &call.alpha, call.b, p.first, call.a, p.second,
                              &call.beta, out, p.out, out, p.out, algo ? algo : &p.algo, workspace_,
                              workspace_bytes_, stream),
               "cublasLtMatmul");
  return gelu || p.bias_epilogue || !call.bias;
}

namespace {

// The product of a Linear layer: x[m, k] (ldx) W[n, k]^T into rows ldy apart (output unset).
gemm_call linear_call(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                      const __nv_bfloat16* weight, int64_t n, int64_t ldy) {
  gemm_call call;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = x;
  call.lda = ldx;
  call.b = weight;
  call.ldb = k;
  call.b_transposed = true;
  call.ldc = ldy;
  return call;
}

}  // namespace

void lt_gemm::linear(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                     const __nv_bfloat16* weight, int64_t n, float* y, int64_t ldy, bool accumulate,
                     cudaStream_t stream, const float* bias) {
  gemm_call call = linear_call(x, m, k, ldx, weight, n, ldy);
  call.c = y;
  call.beta = accumulate ? 1.0f : 0.0f;
  call.bias = bias;
  if (!run(call, stream)) kernels::add_bias(y, m, n, ldy, bias, stream);
}

bool lt_gemm::linear_gelu(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                          const __nv_bfloat16* weight, int64_t n, __nv_bfloat16* y, int64_t ldy,
                          const __nv_bfloat16* bias, cudaStream_t stream) {
  gemm_call call = linear_call(x, m, k, ldx, weight, n, ldy);
  call.gelu_out = y;
  call.gelu_bias = bias;
  return run(call, stream);
}

void lt_gemm::linear_to_bf16(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                            const __nv_bfloat16* weight, int64_t n, __nv_bfloat16* y, int64_t ldy,
                            cudaStream_t stream) {
  gemm_call call = linear_call(x, m, k, ldx, weight, n, ldy);
  call.bf16_out = y;
  if (!run(call, stream)) throw std::logic_error("lt_gemm: a bf16 product reported a bias");
}

}  // namespace cua_s1::gpu
