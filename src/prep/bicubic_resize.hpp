// Antialiased bicubic resize of RGB8 pictures, bit-identical to PyTorch's CPU uint8 kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/rgb_image.hpp"

namespace cua_s1 {

// Fixed-point filter taps for one axis: output i reads `count[i]` input samples starting at
// `first[i]`, weighted by coeffs[i * taps + k] / 2^precision.
struct resample_axis {
  uint32_t taps = 0;  // stride of `coeffs` per output sample (the widest window)
  uint32_t precision = 0;
  std::vector<uint32_t> first;
  std::vector<uint32_t> count;
  std::vector<int16_t> coeffs;
};

// The int16 taps PyTorch 2.14 computes for bicubic (a = -0.5) antialiased resampling from
// `in_size` to `out_size` samples, align_corners = false, no explicit scale factor.
resample_axis make_resample_axis(uint32_t in_size, uint32_t out_size);

// torch.nn.functional.interpolate(uint8 NCHW channels-last, size=(height, width), mode="bicubic",
// antialias=True) as it runs on an AVX2 CPU: horizontal pass first, then vertical, each rounding to
// uint8; an axis whose size does not change is not resampled. width, height >= 1.
rgb_image resize_bicubic_antialias(const rgb_image& src, uint32_t width, uint32_t height);

}  // namespace cua_s1
