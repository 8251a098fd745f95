// The language model's input embedding (token rows and image features) and the letter readout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// h[t, d] = sources[t] >= 0 ? table[sources[t], d] : image[-sources[t] - 1, d] (fp32 out).
void embed_tokens(const __nv_bfloat16* table, const float* image, const int32_t* sources,
                  int64_t tokens, int64_t hidden, float* h, cudaStream_t stream);

// logits[i] = sum_d hidden_state[d] * table[ids[i], d] in fp32, for `count` letters.
void letter_logits(const float* hidden_state, const __nv_bfloat16* table, const int32_t* ids,
                   int64_t count, int64_t hidden, float* logits, cudaStream_t stream);

}  // namespace cua_s1::kernels
