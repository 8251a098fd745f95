// JPEG marker walk that mirrors Pillow 11.3.0's JpegImageFile._open and its MPO detection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace cua_s1 {

struct jpeg_header {
  uint32_t width = 0;   // from the last SOF before SOS, as Pillow reports it
  uint32_t height = 0;
  int layers = 0;       // 1 (L), 3 (RGB) or 4 (CMYK)
  bool progressive = false;
  bool is_mpo = false;  // Pillow would open it as format "MPO" (MP index with > 1 images)
};

// nullopt: Pillow cannot open it (bad marker, truncated segment, unsupported SOF, malformed
// MP entries); every such case is `invalid image data`.
std::optional<jpeg_header> read_jpeg_header(std::span<const uint8_t> file);

}  // namespace cua_s1
