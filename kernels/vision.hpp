// Vision-only kernels: the interpolated position embedding and the 2-D rotary on q and k.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// x[n, d] += sum_{tap < 4} weights[n * 4 + tap] * table[rows[n * 4 + tap], d], summed in fp32 in
// tap order (spec/model.md 3.2); table is the bf16 position table [positions, hidden].
void add_position_embedding(float* x, int64_t patches, int64_t hidden,
                            const __nv_bfloat16* table, const int32_t* rows,
                            const float* weights, cudaStream_t stream);

// qkv [patches, 3 * hidden] fp32 -> bf16, with rotate-half (fp32 cos/sin [patches, head_dim / 2])
// applied to every head of the q and k thirds; v is copied.
void vision_rotary_to_bf16(const float* qkv, int64_t patches, int64_t hidden, int64_t head_dim,
                           const float* cos, const float* sin, __nv_bfloat16* out,
                           cudaStream_t stream);

}  // namespace cua_s1::kernels
