// PNG pixel decoding (libdeflate + row unfiltering, or libspng for interlaced and irregular
// streams; raw samples) plus Pillow's conversions of each PNG mode to RGB.
#pragma once

#include <cstdint>
#include <span>

#include "codec/png_header.hpp"
#include "codec/rgb_image.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// Decodes the image data of a PNG whose header (read_png_header) already passed the size
// limits, reproducing Pillow 11.3.0 `open(...).convert("RGB")` bit for bit. Every failure is
// 422 `invalid image data`.
// Non-interlaced image data that is exactly one complete zlib stream of the expected size is
// inflated by libdeflate and unfiltered here; everything else goes through libspng, whose result
// or error stands (png_decoder_testing.hpp takes either path alone).
outcome<rgb_image> decode_png_pixels(std::span<const uint8_t> file, const png_header& header);

}  // namespace cua_s1
