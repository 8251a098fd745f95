// Elementwise kernels of the forward pass: conversions, bias and residual adds, activations.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/row_runs.hpp"

namespace cua_s1::kernels {

// out[i] = bf16(in[i]) for n values.
void f32_to_bf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream);

// y[r, c] += bias[c] for rows x cols values with row stride ldy.
void add_bias(float* y, int64_t rows, int64_t cols, int64_t ldy, const float* bias,
              cudaStream_t stream);

// out[r * ldo + c] = bf16(act(in[r * cols + c])) for [rows, cols]: tanh-GELU (vision blocks) or
// erf-GELU (merger).
enum class gelu_kind { tanh, erf };
void gelu_rows_to_bf16(const float* in, int64_t rows, int64_t cols, __nv_bfloat16* out,
                       int64_t ldo, gelu_kind kind, cudaStream_t stream);

// out[r, c] = bf16(SiLU(gate[r * ld + c]) * up[r * ld + c]) for [rows, cols] (SwiGLU); ld = cols
// for whole buffers, 2 * cols for the halves of a fused gate/up product (up = gate + cols).
void silu_mul_to_bf16(const float* gate, const float* up, int64_t ld, __nv_bfloat16* out,
                      int64_t rows, int64_t cols, cudaStream_t stream);
// The same from the bf16 outputs of a product (a Linear without a separate LoRA branch).
void silu_mul_to_bf16(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t ld,
                      __nv_bfloat16* out, int64_t rows, int64_t cols, cudaStream_t stream);

// Output gate of full attention: out[t, h*D + d] = bf16(attended[t, h*D + d] *
// sigmoid(qg[t, h*2D + D + d])), the gate read from the interleaved q_proj output.
void attention_gate_to_bf16(const float* attended, const float* qg, int64_t tokens, int64_t heads,
                            int64_t head_dim, __nv_bfloat16* out, cudaStream_t stream);

// Packs each run's last row: out row r = in row runs.bounds[r + 1] - 1, `row_bytes` each (in rows
// `ld_bytes` apart; both multiples of 16, pointers 16-byte aligned). What the readout reads after
// the last layer's sequence mixing.
void copy_last_rows(const void* in, int64_t ld_bytes, const row_runs& runs, int64_t row_bytes,
                    void* out, cudaStream_t stream);

}  // namespace cua_s1::kernels
