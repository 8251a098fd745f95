// Position ids as Transformers' get_rope_index for a single image.
#include "prep/mrope_positions.hpp"

#include <algorithm>

namespace cua_s1 {

mrope_positions compute_mrope_positions(size_t image_start, uint32_t grid_h, uint32_t grid_w,
                                        uint32_t merge_size, size_t text_after) {
  const uint32_t rows = grid_h / merge_size;
  const uint32_t cols = grid_w / merge_size;
  const size_t total = image_start + size_t(rows) * cols + text_after;
  mrope_positions out;
  for (auto& axis : out.axes) axis.reserve(total);
  const auto start = static_cast<int32_t>(image_start);
  for (int32_t i = 0; i < start; ++i)
    for (auto& axis : out.axes) axis.push_back(i);
  for (uint32_t y = 0; y < rows; ++y) {
    for (uint32_t x = 0; x < cols; ++x) {
      out.axes[0].push_back(start);
      out.axes[1].push_back(start + static_cast<int32_t>(y));
      out.axes[2].push_back(start + static_cast<int32_t>(x));
    }
  }
  const int32_t next = start + static_cast<int32_t>(std::max(rows, cols));
  for (size_t i = 0; i < text_after; ++i)
    for (auto& axis : out.axes) axis.push_back(next + static_cast<int32_t>(i));
  int32_t highest = 0;
  for (const auto& axis : out.axes)
    if (!axis.empty()) highest = std::max(highest, *std::max_element(axis.begin(), axis.end()));
  out.rope_delta = highest + 1 - static_cast<int32_t>(total);
  return out;
}

}  // namespace cua_s1
