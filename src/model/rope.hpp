// Rotary position tables (2-D axial for vision, interleaved M-RoPE for text) and rotate-half:
// the CPU backend applies them, the CUDA backend uploads the tables.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "prep/mrope_positions.hpp"

namespace cua_s1 {

// Angles of `rows` positions, `half` per row: x'[d] pairs with x[d + half] and rotates by
// angle[d]. cos and sin are fp32 of the fp32 angle pos * inv_freq.
struct rotary_table {
  int64_t rows = 0;
  int64_t half = 0;
  std::vector<float> cos, sin;  // [rows, half]
  const float* cos_row(int64_t r) const { return cos.data() + r * half; }
  const float* sin_row(int64_t r) const { return sin.data() + r * half; }
};

// inv_freq_i = 1 / theta^(2i / dim), i < dim / 2, in fp32 as torch computes it.
std::vector<float> inverse_frequencies(double theta, int64_t dim);

// Vision axial rotary (spec/model.md 3.3) for a grid of grid_h x grid_w patches listed in
// merge-blocked order: half = head_dim / 2 angles per patch, the first head_dim / 4 from the
// row, the next head_dim / 4 from the column, frequencies 1 / theta^(2j / (head_dim / 2)).
rotary_table vision_rotary(uint32_t grid_h, uint32_t grid_w, uint32_t merge, int64_t head_dim,
                           double theta);

// The position axis (0 = T, 1 = H, 2 = W) of frequency slot i of interleaved M-RoPE
// (spec/model.md 5.1): H when i % 3 == 1 and i < 3 * section[1], W when i % 3 == 2 and
// i < 3 * section[2], else T.
int mrope_axis(int64_t slot, const std::array<uint32_t, 3>& section);

// Text M-RoPE table: half = rotary_dim / 2 slots per token, angle = pos[axis(i)] * inv_freq_i.
rotary_table text_rotary(const mrope_positions& positions, int64_t rotary_dim, double theta,
                         const std::array<uint32_t, 3>& section);

// Rotate-half on the first 2 * half dims of x, in place:
// x'[d] = x[d] cos_d - x[d + half] sin_d, x'[d + half] = x[d + half] cos_d + x[d] sin_d.
void apply_rotate_half(float* x, int64_t half, const float* cos, const float* sin);

}  // namespace cua_s1
