// Attention as S = Q K^T (batched over kv heads, once per q head of a group), P = softmax(S) in
// bf16, O = P V written straight into the head's columns of the output.
#include "gpu/gemm_attention.hpp"

#include <algorithm>

#include "gpu/device_buffer.hpp"
#include "kernels/attention.hpp"

namespace cua_s1::gpu {

void run_attention(lt_gemm& gemm, const attention_problem& p, cudaStream_t stream,
                   size_t score_bytes) {
  if (p.tokens == 0) return;
  const int64_t group = p.q_heads / p.kv_heads;
  const int64_t ld_scores = (p.tokens + 3) / 4 * 4, ld_probs = (p.tokens + 7) / 8 * 8;
  const int64_t row_bytes = p.kv_heads * (ld_scores * 4 + ld_probs * 2);
  const int64_t chunk = std::clamp<int64_t>(int64_t(score_bytes) / row_bytes, 1, p.tokens);
  device_buffer<float> scores(size_t(p.kv_heads * chunk * ld_scores), stream);
  device_buffer<__nv_bfloat16> probs(size_t(p.kv_heads * chunk * ld_probs), stream);

  for (int64_t sub = 0; sub < group; ++sub)
    for (int64_t first = 0; first < p.tokens; first += chunk) {
      const int64_t rows = std::min(chunk, p.tokens - first);
      const int64_t keys = p.causal ? first + rows : p.tokens;
      gemm_call qk;  // S_g[rows, keys] = Q_{g * group + sub}[first.., :] K_g^T
      qk.m = rows;
      qk.n = keys;
      qk.k = p.head_dim;
      qk.a = p.q + first * p.ldq + sub * p.head_dim;
      qk.lda = p.ldq;
      qk.stride_a = group * p.head_dim;
      qk.b = p.k;
      qk.ldb = p.ldk;
      qk.stride_b = p.head_dim;
      qk.b_transposed = true;
      qk.c = scores.get();
      qk.ldc = ld_scores;
      qk.stride_c = chunk * ld_scores;
      qk.batch = int32_t(p.kv_heads);
      gemm.run(qk, stream);

      kernels::softmax_args softmax;
      softmax.scores = scores.get();
      softmax.ld_scores = ld_scores;
      softmax.probs = probs.get();
      softmax.ld_probs = ld_probs;
      softmax.batches = p.kv_heads;
      softmax.rows = chunk;
      softmax.valid_rows = rows;
      softmax.keys = keys;
      softmax.scale = p.scale;
      softmax.causal = p.causal;
      softmax.first_row = first;
      kernels::softmax_to_bf16(softmax, stream);

      gemm_call pv;  // O[first.., head g * group + sub] = P_g[rows, keys] V_g[keys, :]
      pv.m = rows;
      pv.n = p.head_dim;
      pv.k = keys;
      pv.a = probs.get();
      pv.lda = ld_probs;
      pv.stride_a = chunk * ld_probs;
      pv.b = p.v;
      pv.ldb = p.ldv;
      pv.stride_b = p.head_dim;
      pv.b_transposed = false;
      pv.c = p.out + first * p.ldo + sub * p.head_dim;
      pv.ldc = p.ldo;
      pv.stride_c = group * p.head_dim;
      pv.batch = int32_t(p.kv_heads);
      gemm.run(pv, stream);
    }
}

}  // namespace cua_s1::gpu
