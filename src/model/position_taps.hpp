// The bilinear taps of the vision position embedding (spec/model.md 3.2), shared by the CPU and
// CUDA backends: for each patch in merge-blocked order, 4 table rows and their fp32 weights.
#pragma once

#include <cstdint>
#include <vector>

#include "prep/pixel_values.hpp"

namespace cua_s1 {

struct position_taps {
  std::vector<int32_t> rows;   // [patches * 4]: (y0,x0), (y0,x1), (y1,x0), (y1,x1)
  std::vector<float> weights;  // [patches * 4]
};

// Taps into a square table of side x side rows (align_corners = True interpolation).
position_taps vision_position_taps(const grid_thw& grid, int64_t side, uint32_t merge);

}  // namespace cua_s1
