// For tests only: decode_png_pixels by one of its two paths alone, so that they can be compared
// (tests/codec_png_test.cpp): libdeflate_only fails where the fast path declines, libspng_only
// never takes it.
#pragma once

#include <cstdint>
#include <span>

#include "codec/png_decoder.hpp"

namespace cua_s1 {

enum class png_inflate { libdeflate_only, libspng_only };

outcome<rgb_image> decode_png_pixels(std::span<const uint8_t> file, const png_header& header,
                                     png_inflate only);

}  // namespace cua_s1
