// Fused scaled dot-product attention (flash-attention style): scores never leave the chip, the
// softmax is computed online in fp32, P is rounded to bf16 before P V (as the reference's fused
// kernels do), the output is fp32 or rounded once to bf16. Head dimensions 64 (vision) and 256
// (text). On Hopper the vision case (head size 64, no causal mask, no prefix) runs on
// warpgroup MMAs (kernels/flash_attention_wgmma.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/row_runs.hpp"

namespace cua_s1::kernels {

struct attention_problem {
  const __nv_bfloat16* q = nullptr;  // head h of token t at q[t * ldq + h * head_dim]
  int64_t ldq = 0;
  const __nv_bfloat16* k = nullptr;  // kv head g at k[t * ldk + g * head_dim]
  int64_t ldk = 0;
  const __nv_bfloat16* v = nullptr;
  int64_t ldv = 0;
  float* out = nullptr;  // fp32, head h of token t at out[t * ldo + h * head_dim]
  __nv_bfloat16* out_bf16 = nullptr;  // instead of out: the output rounded to bf16, same layout
  int64_t ldo = 0;
  int64_t tokens = 0;   // queries
  // Keys (0: as many as queries). With more keys than queries the queries are the last
  // `tokens` positions: causal query i sees keys j <= i + (keys - tokens) (a prompt's suffix
  // over its cached prefix).
  int64_t keys = 0;
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0;  // q head h reads kv head h / (q / kv)
  float scale = 1.0f;  // > 0
  bool causal = false;
  // Several sequences over one cached prefix (runs.count > 0; `tokens` = runs.rows()): query
  // rows of run r are its own positions; it sees the first `keys` rows of k/v (the shared
  // prefix) followed by its own keys, stored at k/v rows keys + runs.bounds[r] onwards (each
  // run's rows right after the ones before it). Causal query i of a run sees prefix and own
  // keys up to its own position i.
  row_runs runs;
};

// Runs on `stream`: on Hopper (sm_90a builds) head size 64 without a causal mask or prefix on
// wgmma, everything else on the portable mma.sync kernel (flash_attention_testing.hpp forces
// that one). Throws std::invalid_argument for an unsupported head size, q/kv head counts
// that do not divide, or operands not 16-byte aligned (ld* multiples of 8 elements).
void flash_attention(const attention_problem& problem, cudaStream_t stream);

}  // namespace cua_s1::kernels
