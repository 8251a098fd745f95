// Orchestrates header parse, MIME match, header-only limits and the PNG / JPEG pixel decoders.
#include "codec/image_decoder.hpp"

#include <algorithm>
#include <string>

#include "codec/codec_errors.hpp"
#include "codec/image_format.hpp"
#include "codec/jpeg_decoder.hpp"
#include "codec/jpeg_header.hpp"
#include "codec/png_decoder.hpp"
#include "codec/png_header.hpp"

namespace cua_s1 {
namespace {

failure fail(std::string_view message) { return unprocessable(std::string(message)); }

// The header-only checks after a successful open, in the reference worker's order.
std::optional<failure> check_limits(uint32_t width, uint32_t height, uint32_t frames,
                                    bool format_matches) {
  if (!format_matches) return fail(codec_errors::format_mismatch);
  const uint64_t lo = std::min(width, height), hi = std::max(width, height);
  if (hi > uint64_t{codec_max_aspect_ratio} * lo) return fail(codec_errors::aspect_ratio);
  if (hi > codec_max_image_side || uint64_t{width} * height > codec_max_image_pixels || frames != 1) {
    return fail(codec_errors::size_limits);
  }
  return std::nullopt;
}

bool is_bomb(uint32_t width, uint32_t height) {
  return uint64_t{width} * height > codec_pillow_bomb_pixels;
}

}  // namespace

outcome<rgb_image> decode_image(std::span<const uint8_t> bytes, image_mime mime,
                                const image_limits& limits) {
  switch (sniff_image_format(bytes)) {
    case sniffed_format::png: {
      auto header = read_png_header(bytes);
      if (!header) return fail(codec_errors::invalid_data);
      const uint32_t w = header->state.width, h = header->state.height;
      if (is_bomb(w, h)) return fail(codec_errors::invalid_data);
      if (auto error = check_limits(w, h, header->frames, mime == image_mime::png)) {
        return *error;
      }
      return decode_png_pixels(bytes, *header);
    }
    case sniffed_format::jpeg: {
      auto header = read_jpeg_header(bytes);
      if (!header) return fail(codec_errors::invalid_data);
      if (is_bomb(header->width, header->height)) return fail(codec_errors::invalid_data);
      // A multi-picture file is format "MPO" in Pillow, never "JPEG".
      const bool matches = mime == image_mime::jpeg && !header->is_mpo;
      if (auto error = check_limits(header->width, header->height, 1, matches)) return *error;
      return decode_jpeg_pixels(bytes, *header, limits.max_jpeg_scans);
    }
    case sniffed_format::other_image:
      return fail(codec_errors::format_mismatch);
    case sniffed_format::unknown:
      break;
  }
  return fail(codec_errors::invalid_data);
}

outcome<rgb_image> decode_image_data_url(std::string_view data_url, const image_limits& limits) {
  auto payload = parse_image_data_url(data_url);
  if (!payload) return payload.error();
  return decode_image(payload->bytes, payload->mime, limits);
}

}  // namespace cua_s1
