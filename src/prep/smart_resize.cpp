// Qwen2-VL smart_resize, reproducing the Python float64 arithmetic of Transformers 5.17.
#include "prep/smart_resize.hpp"

#include <algorithm>
#include <cmath>

namespace cua_s1 {
namespace {

// Python's round(int / int) * factor: the division is correctly rounded in float64 (both ints are
// far below 2^53) and round() breaks ties to even, which std::nearbyint does in the default
// rounding mode.
uint64_t round_to_factor(uint32_t side, uint32_t factor) {
  const double q = static_cast<double>(side) / static_cast<double>(factor);
  return static_cast<uint64_t>(std::nearbyint(q)) * factor;
}

}  // namespace

bool aspect_ratio_supported(uint32_t width, uint32_t height) {
  if (width == 0 || height == 0) return false;
  const double longer = std::max(width, height);
  const double shorter = std::min(width, height);
  return longer / shorter <= max_aspect_ratio;
}

resized_size smart_resize(uint32_t width, uint32_t height, const processor_config& config) {
  const uint32_t factor = config.factor();
  const double f = static_cast<double>(factor);
  const double h = static_cast<double>(height);
  const double w = static_cast<double>(width);
  const double area = static_cast<double>(static_cast<uint64_t>(height) * width);

  uint64_t h_bar = round_to_factor(height, factor);
  uint64_t w_bar = round_to_factor(width, factor);
  if (h_bar * w_bar > config.max_pixels) {
    // beta = sqrt((h * w) / max); h' = max(factor, floor(h / beta / factor) * factor).
    const double beta = std::sqrt(area / static_cast<double>(config.max_pixels));
    h_bar = std::max<uint64_t>(factor, static_cast<uint64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max<uint64_t>(factor, static_cast<uint64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < config.min_pixels) {
    // beta = sqrt(min / (h * w)); h' = ceil(h * beta / factor) * factor.
    const double beta = std::sqrt(static_cast<double>(config.min_pixels) / area);
    h_bar = static_cast<uint64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<uint64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {static_cast<uint32_t>(w_bar), static_cast<uint32_t>(h_bar)};
}

}  // namespace cua_s1
