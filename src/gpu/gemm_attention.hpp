// Scaled dot-product attention from cuBLASLt products and a softmax kernel, in query-row chunks
// so the fp32 score buffer stays under a bound (no T x T x heads allocation for large images).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/lt_gemm.hpp"

namespace cua_s1::gpu {

struct attention_problem {
  const __nv_bfloat16* q = nullptr;  // head h of token t at q[t * ldq + h * head_dim]
  int64_t ldq = 0;
  const __nv_bfloat16* k = nullptr;  // kv head g at k[t * ldk + g * head_dim]
  int64_t ldk = 0;
  const __nv_bfloat16* v = nullptr;
  int64_t ldv = 0;
  float* out = nullptr;  // fp32, head h of token t at out[t * ldo + h * head_dim]
  int64_t ldo = 0;
  int64_t tokens = 0;   // queries = keys (one prompt or one image)
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0;  // q head h reads kv head h / (q / kv)
  float scale = 1.0f;
  bool causal = false;
};

// Runs on `stream`; scratch is allocated stream-ordered and bounded by `score_bytes`.
void run_attention(lt_gemm& gemm, const attention_problem& problem, cudaStream_t stream,
                   size_t score_bytes = size_t(256) << 20);

}  // namespace cua_s1::gpu
