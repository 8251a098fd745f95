// The gated full-attention token mixer of the full_attention layers (spec/model.md 4.5) in fp32.
#pragma once

#include <cstdint>

#include "model/cpu/gemm.hpp"
#include "model/rope.hpp"
#include "model/model_weights.hpp"

namespace cua_s1::cpu {

// out[t, hidden] for a whole prompt x [tokens, hidden]: q/gate split per head, zero-centred q/k
// norms, partial M-RoPE from `rotary` (rotary_dim / 2 angles per token), causal GQA attention,
// the sigmoid output gate and o_proj.
void gated_attention_forward(const gated_attention_weights& layer, const text_config& config,
                             gemm_engine& gemm, const rotary_table& rotary, const float* x,
                             int64_t tokens, float* out);

}  // namespace cua_s1::cpu
