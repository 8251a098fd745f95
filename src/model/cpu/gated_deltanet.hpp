// The Gated DeltaNet token mixer of the linear_attention layers (spec/model.md 4.4) in fp32.
#pragma once

#include <cstdint>
#include <vector>

#include "model/cpu/gemm.hpp"
#include "model/model_weights.hpp"

namespace cua_s1::cpu {

// out[t, hidden] = GatedDeltaNet(x)[t] for a whole prompt x [tokens, hidden] (no cache): causal
// depthwise conv + SiLU, beta/g gates, L2-normalised q/k, the gated delta rule run token by
// token in fp32 (the recurrent form; equal to the reference's chunked form up to rounding),
// gated RMSNorm and out_proj.
void gated_deltanet_forward(const gated_deltanet_weights& layer, const text_config& config,
                            gemm_engine& gemm, unsigned threads, const float* x, int64_t tokens,
                            float* out);

}  // namespace cua_s1::cpu
