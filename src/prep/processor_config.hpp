// The image-processor settings of preprocessor_config.json that preprocessing depends on.
#pragma once

#include <array>
#include <cstdint>

namespace cua_s1 {

// Defaults are the pinned Qwen3.5-4B values (spec/contract.md section 7.2).
struct processor_config {
  uint32_t patch_size = 16;
  uint32_t merge_size = 2;
  uint32_t temporal_patch_size = 2;
  uint64_t min_pixels = 65536;     // size.shortest_edge
  uint64_t max_pixels = 16777216;  // size.longest_edge
  std::array<float, 3> image_mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> image_std{0.5f, 0.5f, 0.5f};

  uint32_t factor() const { return patch_size * merge_size; }
};

}  // namespace cua_s1
