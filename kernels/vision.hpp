// Vision-only kernels: pixel values from the 8-bit picture, the interpolated position embedding
// and the 2-D rotary on q and k.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// The picture's patches as the patch embedding reads them: out[n, e] (row-major,
// [grid_h * grid_w, 3 * temporal * patch^2]) = bf16((rgb - mean[c]) / std[c]) in float32 with IEEE
// subtraction and division, patches in (block_y, block_x, merge_y, merge_x) order and each row in
// (channel, temporal, patch_y, patch_x) order: prep/pixel_values' write_pixel_values, rounded to
// bf16. rgb is width x height x 3 bytes with width = grid_w * patch, height = grid_h * patch.
struct patchify_args {
  const uint8_t* rgb = nullptr;
  uint32_t width = 0, grid_h = 0, grid_w = 0;
  uint32_t patch = 0, merge = 0, temporal = 0;
  float mean[3] = {}, std[3] = {};
};
void patchify_to_bf16(const patchify_args& args, __nv_bfloat16* out, cudaStream_t stream);

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
