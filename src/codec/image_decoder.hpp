// The codec's public entry points: data URL or raw bytes -> validated RGB8 image (contract 2, 3.2, 7.1).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "codec/data_url.hpp"
#include "codec/rgb_image.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

inline constexpr uint32_t codec_max_image_side = 2048;
inline constexpr uint64_t codec_max_image_pixels = 1'048'576;
inline constexpr uint32_t codec_max_aspect_ratio = 200;
// Pillow raises DecompressionBombError in Image.open above 2 * MAX_IMAGE_PIXELS.
inline constexpr uint64_t codec_pillow_bomb_pixels = 2ull * 89'478'485;

// Limits of ours beyond the contract's (server options).
struct image_limits {
  // A progressive JPEG with more scans than this is `invalid image data` (encoders write 6-10;
  // a file of thousands of tiny scans would take seconds to decode).
  uint32_t max_jpeg_scans = 100;
};

// Parses the data URL, then decode_image. All failures are 422 with the contract's messages.
outcome<rgb_image> decode_image_data_url(std::string_view data_url, const image_limits& limits = {});

// Checks, in the reference order: the header opens (else `invalid image data`), the format
// matches the MIME, aspect ratio, size and frame limits (all from the header, before any
// pixel allocation), then decodes exactly like Pillow 11.3.0 `open(...).convert("RGB")`.
outcome<rgb_image> decode_image(std::span<const uint8_t> bytes, image_mime mime,
                                const image_limits& limits = {});

}  // namespace cua_s1
