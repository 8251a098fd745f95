// JPEG pixel decoding with TurboJPEG (ISLOW DCT, fancy upsampling: Pillow's libjpeg settings).
#pragma once

#include <cstdint>
#include <span>

#include "codec/jpeg_header.hpp"
#include "codec/rgb_image.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// Decodes a JPEG whose header (read_jpeg_header) already passed the size limits to RGB8 the way
// Pillow 11.3.0 does (no EXIF rotation; grayscale replicated). CMYK/YCCK files are refused with
// `CMYK JPEG images are not supported`; everything Pillow would fail to load (truncated data,
// libjpeg errors) is `invalid image data`, and so is a file of more than `max_scans` scans
// (checked before decoding: each scan is a pass over the whole image).
outcome<rgb_image> decode_jpeg_pixels(std::span<const uint8_t> file, const jpeg_header& header,
                                      uint32_t max_scans);

// What one walk over a JPEG's markers and entropy-coded data finds.
struct jpeg_stream_facts {
  bool complete = false;  // jpeg_data_complete
  uint32_t scans = 0;     // SOS markers in the whole file
};
jpeg_stream_facts walk_jpeg_stream(std::span<const uint8_t> file);

// Whether Pillow's suspending libjpeg source would reach the end of decoding with this much data:
// a single-scan image needs its entropy data to end at a marker; a multi-scan (progressive or
// non-interleaved) image is consumed whole by jpeg_start_decompress and needs an EOI.
bool jpeg_data_complete(std::span<const uint8_t> file);

}  // namespace cua_s1
