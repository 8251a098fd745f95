// Prefix tests for the image formats Pillow recognises.
#include "codec/image_format.hpp"

#include <cstring>
#include <string_view>

namespace cua_s1 {
namespace {

bool has_prefix(std::span<const uint8_t> b, std::string_view p, size_t at = 0) {
  return b.size() >= at + p.size() && std::memcmp(b.data() + at, p.data(), p.size()) == 0;
}

bool is_other_image(std::span<const uint8_t> b) {
  using namespace std::string_view_literals;
  if (has_prefix(b, "GIF87a") || has_prefix(b, "GIF89a")) return true;
  if (has_prefix(b, "BM")) return true;
  if (has_prefix(b, "II*\0"sv) || has_prefix(b, "MM\0*"sv)) return true;
  if (has_prefix(b, "RIFF") && has_prefix(b, "WEBP", 8)) return true;
  if (has_prefix(b, "\0\0\1\0"sv)) return true;  // ICO
  if (has_prefix(b, "8BPS") || has_prefix(b, "qoif") || has_prefix(b, "DDS ")) return true;
  if (has_prefix(b, "\0\0\0\x0cjP  \r\n\x87\n"sv) || has_prefix(b, "\xff\x4f\xff\x51"sv)) return true;
  if (has_prefix(b, "ftyp", 4) && (has_prefix(b, "avif", 8) || has_prefix(b, "avis", 8))) {
    return true;
  }
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' &&
      (b[2] == ' ' || b[2] == '\n' || b[2] == '\r' || b[2] == '\t')) {
    return true;  // PBM / PGM / PPM
  }
  return false;
}

}  // namespace

sniffed_format sniff_image_format(std::span<const uint8_t> bytes) {
  using namespace std::string_view_literals;
  if (has_prefix(bytes, "\x89PNG\r\n\x1a\n"sv)) return sniffed_format::png;
  if (has_prefix(bytes, "\xff\xd8\xff"sv)) return sniffed_format::jpeg;
  if (is_other_image(bytes)) return sniffed_format::other_image;
  return sniffed_format::unknown;
}

}  // namespace cua_s1
