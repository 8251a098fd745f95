// 3-D M-RoPE position ids (T, H, W) of a prompt holding one image span (contract section 8).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cua_s1 {

struct mrope_positions {
  std::array<std::vector<int32_t>, 3> axes;  // T, H, W, one entry per token
  int32_t rope_delta = 0;                    // max(position) + 1 - sequence length
};

// Positions for `image_tokens` image pads starting at token index `image_start`, on a merged
// grid of (grid_h / merge) x (grid_w / merge), followed by `text_after` text tokens.
mrope_positions compute_mrope_positions(size_t image_start, uint32_t grid_h, uint32_t grid_w,
                                        uint32_t merge_size, size_t text_after);

}  // namespace cua_s1
