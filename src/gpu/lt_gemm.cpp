// cuBLASLt plans: the row-major product C = A op(B) is run as the column-major C^T = op(B)^T A^T.
#include "gpu/lt_gemm.hpp"

#include <string>

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
  cublasLtMatmulAlgo_t algo{};
  bool bias_epilogue = false;  // the algorithm adds the bias (set per call: the pointer)
  ~plan() {
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
  const int align_c = alignment_of(call.c, (call.ldc | call.stride_c) * 4);
  const key id{call.m,        call.n,        call.k,        call.lda,     call.ldb,
               call.ldc,      call.b_transposed, call.batch, call.stride_a, call.stride_b,
               call.stride_c, align_a,       align_b,       align_c,      call.beta != 0.0f,
               call.bias != nullptr};
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
  check_cublas(cublasLtMatrixLayoutCreate(&p->out, CUDA_R_32F, call.n, call.m, call.ldc),
               "cublasLtMatrixLayoutCreate(C)");
  set_layout_batch(p->first, call.batch, call.stride_b);
  set_layout_batch(p->second, call.batch, call.stride_a);
  set_layout_batch(p->out, call.batch, call.stride_c);

  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  struct preference_guard {
    cublasLtMatmulPreference_t p;
    ~preference_guard() { cublasLtMatmulPreferenceDestroy(p); }
  } guard{preference};
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value, const char* what) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value), what);
  };
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(workspace_bytes_), "workspace preference");
  // The first operand is B, the second A (column-major view); C and D are the same buffer.
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(align_b), "alignment preference (B)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(align_a), "alignment preference (A)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(align_c), "alignment preference (C)");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(align_c), "alignment preference (D)");
  auto heuristic = [&](cublasLtMatmulHeuristicResult_t& result) {
    int found_count = 0;
    check_cublas(cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->first, p->second, p->out,
                                                p->out, preference, 1, &result, &found_count),
                 "cublasLtMatmulAlgoGetHeuristic");
    return found_count > 0;
  };
  cublasLtMatmulHeuristicResult_t result{};
  bool have_algorithm = false;
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

bool lt_gemm::run(const gemm_call& call, cudaStream_t stream) {
  if (call.m == 0 || call.n == 0) return true;
  const plan& p = plan_for(call);
  if (p.bias_epilogue)
    check_cublas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &call.bias, sizeof call.bias),
                 "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  // C^T[n, m] = op(B)^T[n, k] A^T[k, m] in column-major terms.
  check_cublas(cublasLtMatmul(handle_, p.desc, &call.alpha, call.b, p.first, call.a, p.second,
                              &call.beta, call.c, p.out, call.c, p.out, &p.algo, workspace_,
                              workspace_bytes_, stream),
               "cublasLtMatmul");
  return p.bias_epilogue || !call.bias;
}

void lt_gemm::linear(const __nv_bfloat16* x, int64_t m, int64_t k, int64_t ldx,
                     const __nv_bfloat16* weight, int64_t n, float* y, int64_t ldy, bool accumulate,
                     cudaStream_t stream, const float* bias) {
  gemm_call call;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = x;
  call.lda = ldx;
  call.b = weight;
  call.ldb = k;
  call.b_transposed = true;
  call.c = y;
  call.ldc = ldy;
  call.beta = accumulate ? 1.0f : 0.0f;
  call.bias = bias;
  if (!run(call, stream)) kernels::add_bias(y, m, n, ldy, bias, stream);
}

}  // namespace cua_s1::gpu
