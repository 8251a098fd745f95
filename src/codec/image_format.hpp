// Magic-byte sniffing of the formats Pillow 11.3.0 can open, to tell "wrong MIME" from garbage.
#pragma once

#include <cstdint>
#include <span>

namespace cua_s1 {

enum class sniffed_format { png, jpeg, other_image, unknown };

// PNG and JPEG by their Pillow `_accept` prefixes; GIF, BMP, TIFF, WebP, ICO, PSD, QOI, JPEG 2000,
// DDS, AVIF/HEIF and PNM by theirs (magic only: these are never decoded, only refused as a
// MIME mismatch).
sniffed_format sniff_image_format(std::span<const uint8_t> bytes);

}  // namespace cua_s1
