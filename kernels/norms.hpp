// Row normalisations on the GPU: LayerNorm (vision), zero-centred RMSNorm (decoder, final),
// the GDN gated RMSNorm, and the per-head q/k RMSNorm fused with the text rotary.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// out[r] = bf16((x[r] - mean) * rsqrt(var + eps) * w + b), rows of `dim` fp32 values; out's rows
// ldo apart (0: dim).
void layer_norm_to_bf16(const float* x, int64_t rows, int64_t dim, const float* weight,
                        const float* bias, float eps, __nv_bfloat16* out, cudaStream_t stream,
                        int64_t ldo = 0);

// Zero-centred RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w), rows `ld` apart. One of out_bf16
// and out_f32 is written (rows `dim` apart).
void rms_norm_zero_centred(const float* x, int64_t rows, int64_t dim, int64_t ld,
                           const float* weight, float eps, __nv_bfloat16* out_bf16,
                           float* out_f32, cudaStream_t stream);

// Qwen3_5RMSNormGated over rows of `dim`: bf16((o * rsqrt(mean(o^2) + eps)) * w * SiLU(z)).
// o and out are [rows, dim]; z holds `row_groups` rows of dim per line, lines ld_z apart (row r
// gates with line r / row_groups, slot r % row_groups).
void gated_rms_norm_to_bf16(const float* o, const float* z, int64_t ld_z, int64_t row_groups,
                            int64_t rows, int64_t dim, const float* weight, float eps,
                            __nv_bfloat16* out, cudaStream_t stream);

// Per (token, head): zero-centred RMSNorm over head_dim, then rotate-half on the first
// 2 * half dims with cos/sin [tokens, half], written as bf16 to out[t * heads * head_dim +
// h * head_dim + d]. Input head h of token t starts at in[t * ld_in + h * head_stride].
struct head_norm_rope_args {
  const float* in = nullptr;
  int64_t ld_in = 0, head_stride = 0;
  int64_t tokens = 0, heads = 0, head_dim = 0;
  const float* weight = nullptr;  // [head_dim], zero-centred
  float eps = 1e-6f;
  const float* cos = nullptr;  // [tokens, half]
  const float* sin = nullptr;
  int64_t half = 0;
  __nv_bfloat16* out = nullptr;
};
void head_norm_rope_to_bf16(const head_norm_rope_args& args, cudaStream_t stream);

}  // namespace cua_s1::kernels
