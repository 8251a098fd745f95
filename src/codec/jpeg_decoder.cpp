// TurboJPEG decode plus the completeness rule that separates libjpeg warnings Pillow ignores
// (corrupt-data warnings) from the truncation Pillow rejects ("image file is truncated").
//
// CMYK choice: Pillow would open a 4-component JPEG as mode CMYK ("CMYK;I", Adobe inverted) and
// convert it to RGB. Screenshots are never CMYK and TurboJPEG has no matching CMYK->RGB path, so
// we refuse such files with 422 `CMYK JPEG images are not supported` (YCCK included) after the
// format and size checks, instead of risking a silently different picture.
#include "codec/jpeg_decoder.hpp"

#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "codec/byte_reader.hpp"
#include "codec/codec_errors.hpp"

namespace cua_s1 {
namespace {

failure invalid() { return unprocessable(std::string(codec_errors::invalid_data)); }

struct tj_deleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// Position of the next marker at or after pos inside entropy-coded data (0xFF followed by a
// byte that is neither a stuffed 0x00, a fill 0xFF nor RSTn); npos when the data runs out.
size_t find_marker_in_scan(std::span<const uint8_t> file, size_t pos) {
  const uint8_t* base = file.data();
  const size_t size = file.size();
  while (pos < size) {
    const void* hit = std::memchr(base + pos, 0xFF, size - pos);
    if (hit == nullptr) return std::string::npos;
    size_t at = static_cast<size_t>(static_cast<const uint8_t*>(hit) - base);
    size_t next = at + 1;
    while (next < size && base[next] == 0xFF) ++next;  // fill bytes
    if (next >= size) return std::string::npos;
    const uint8_t m = base[next];
    if (m != 0x00 && !(m >= 0xD0 && m <= 0xD7)) return next - 1;
    pos = next + 1;
  }
  return std::string::npos;
}

}  // namespace

jpeg_stream_facts walk_jpeg_stream(std::span<const uint8_t> file) {
  jpeg_stream_facts facts;
  const size_t size = file.size();
  if (size < 4 || file[0] != 0xFF || file[1] != 0xD8) return facts;
  size_t pos = 2;
  int components = 0;
  bool progressive = false;
  bool first_scan = true;
  bool multi_scan = false;
  std::optional<bool> decided;  // a single-scan image is complete once its scan data ends
  auto finish = [&](bool complete_here) {
    facts.complete = decided.value_or(complete_here);
    return facts;
  };
  for (;;) {
    // next_marker: skip garbage up to 0xFF, then fill bytes.
    while (pos < size && file[pos] != 0xFF) ++pos;
    while (pos < size && file[pos] == 0xFF) ++pos;
    if (pos >= size) return finish(false);
    const uint8_t m = file[pos++];
    if (m == 0xD9) return finish(true);                   // EOI
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // TEM, RSTn: no length
    if (size - pos < 2) return finish(false);
    const size_t length = read_be16(file.data() + pos);
    if (length < 2 || size - pos < length) return finish(false);
    const uint8_t* payload = file.data() + pos + 2;
    if ((m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) && length >= 8) {
      components = payload[5];
      progressive = (m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE);
    }
    pos += length;
    if (m != 0xDA) continue;
    ++facts.scans;
    if (first_scan) {
      const int in_scan = length >= 3 ? payload[0] : 0;
      multi_scan = progressive || in_scan != components;
      first_scan = false;
    }
    const size_t marker_at = find_marker_in_scan(file, pos);
    if (marker_at == std::string::npos) return finish(false);  // ends inside entropy data
    // All rows decodable; finish_decompress may suspend. The walk goes on to count scans.
    if (!multi_scan && !decided) decided = true;
    pos = marker_at;
  }
}

bool jpeg_data_complete(std::span<const uint8_t> file) { return walk_jpeg_stream(file).complete; }

outcome<rgb_image> decode_jpeg_pixels(std::span<const uint8_t> file, const jpeg_header& header,
                                      uint32_t max_scans) {
  if (header.layers == 4) {
    return unprocessable(std::string(codec_errors::cmyk_unsupported));
  }
  std::unique_ptr<void, tj_deleter> handle(tjInitDecompress());
  if (!handle) return invalid();
  auto* data = const_cast<unsigned char*>(file.data());  // TurboJPEG 2.1 API is not const
  const auto size = static_cast<unsigned long>(file.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  // A corrupt-data warning (e.g. extraneous bytes before a marker) still yields the header.
  if (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsamp, &colorspace) != 0 &&
      tjGetErrorCode(handle.get()) != TJERR_WARNING) {
    return invalid();
  }
  // libjpeg reads the first SOF, Pillow reports the last one; a second SOF is a libjpeg error.
  if (static_cast<uint32_t>(width) != header.width ||
      static_cast<uint32_t>(height) != header.height) {
    return invalid();
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    return unprocessable(std::string(codec_errors::cmyk_unsupported));
  }
  // Pillow ignores libjpeg warnings but not running out of data mid-decode. Each scan costs a
  // pass over the coefficients: more scans than any encoder writes is refused (our choice,
  // README "Limits"; Pillow would decode it, slowly).
  const jpeg_stream_facts facts = walk_jpeg_stream(file);
  if (!facts.complete || facts.scans > max_scans) return invalid();
  rgb_image image;
  image.width = header.width;
  image.height = header.height;
  // Zeroed: picture memory is reused, and no byte of an earlier picture may survive in rows a
  // corrupt stream leaves unwritten.
  image.pixels.assign(size_t{image.width} * image.height * 3, 0);
  // flags = 0: JDCT_ISLOW and fancy upsampling, exactly Pillow's decoder defaults.
  const int rc = tjDecompress2(handle.get(), data, size, image.pixels.data(), width, 0, height,
                               TJPF_RGB, 0);
  if (rc != 0 && tjGetErrorCode(handle.get()) != TJERR_WARNING) return invalid();
  return image;
}

}  // namespace cua_s1
