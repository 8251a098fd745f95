// Row normalisations of the forward pass in fp32: LayerNorm, (zero-centred) RMSNorm, gated RMSNorm.
#pragma once

#include <cstdint>

namespace cua_s1::cpu {

// LayerNorm over `dim` per row: (x - mean) / sqrt(var + eps) * w + b (biased variance).
void layer_norm(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias,
                float eps, float* out);

// RMSNorm x * rsqrt(mean(x^2) + eps) * scale; scale = 1 + w when zero_centred (decoder, final,
// q/k norms of Qwen3.5), else w. Rows are `stride` floats apart; in place allowed.
void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
              bool zero_centred, float eps, float* out, int64_t out_stride);

// Qwen3_5RMSNormGated per row of `dim`: (o * rsqrt(mean(o^2) + eps)) * w * SiLU(z).
void gated_rms_norm(const float* o, const float* z, int64_t rows, int64_t dim, const float* weight,
                    float eps, float* out);

}  // namespace cua_s1::cpu
