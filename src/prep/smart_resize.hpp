// Qwen2-VL smart_resize: the processor's target size for an input picture (contract 7.3).
#pragma once

#include <cstdint>

#include "prep/processor_config.hpp"

namespace cua_s1 {

struct resized_size {
  uint32_t width = 0;
  uint32_t height = 0;
};

// Largest aspect ratio the reference processor accepts (it raises above it).
inline constexpr double max_aspect_ratio = 200.0;

// True when max(w, h) / min(w, h) <= 200 and both sides are non-zero, i.e. when the reference
// smart_resize would not raise.
bool aspect_ratio_supported(uint32_t width, uint32_t height);

// Transformers 5.17 qwen2_vl smart_resize with factor = patch_size * merge_size: round each side
// to the factor (ties to even), then rescale by beta when the area leaves [min_pixels,
// max_pixels]. Precondition: aspect_ratio_supported(width, height).
resized_size smart_resize(uint32_t width, uint32_t height, const processor_config& config);

}  // namespace cua_s1
