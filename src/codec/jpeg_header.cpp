// Pillow 11.3.0 JpegImagePlugin semantics (read for facts only): markers up to the first SOS,
// the handler checks that raise, and jpeg_factory's MPO decision from the APP2 "MPF\0" index.
#include "codec/jpeg_header.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "codec/byte_reader.hpp"

namespace cua_s1 {
namespace {

bool starts_with(std::span<const uint8_t> s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

bool contains(std::span<const uint8_t> s, std::string_view needle) {
  return std::search(s.begin(), s.end(), needle.begin(), needle.end()) != s.end();
}

bool is_sof(unsigned marker) {
  switch (marker) {
    case 0xC0: case 0xC1: case 0xC2: case 0xC3: case 0xC5: case 0xC6: case 0xC7:
    case 0xC9: case 0xCA: case 0xCB: case 0xCD: case 0xCE: case 0xCF: case 0xDE:
      return true;
    default:
      return false;
  }
}

// The APP13 "Photoshop 3.0" resource walk: struct errors end it quietly, but reading the
// name length past the end raises IndexError (open fails).
bool photoshop_ok(std::span<const uint8_t> s) {
  size_t offset = 14;
  while (offset + 4 <= s.size() && std::memcmp(s.data() + offset, "8BIM", 4) == 0) {
    offset += 4;
    if (offset + 2 > s.size()) return true;  // i16 struct.error: break
    offset += 2;
    if (offset >= s.size()) return false;  // s[offset]: IndexError
    offset += 1 + s[offset];
    offset += offset & 1;
    if (offset + 4 > s.size()) return true;
    const uint32_t size = read_be32(s.data() + offset);
    offset += 4;
    offset += size;
    offset += offset & 1;
  }
  return true;
}

enum class mp_verdict { jpeg, mpo, broken };

// A TIFF IFD value of an integer type and count 1, as Pillow's ImageFileDirectory gives it.
struct ifd_entry {
  uint16_t type = 0;
  uint32_t count = 0;
  std::span<const uint8_t> data;
};

// _getmp + jpeg_factory: "broken" where Pillow raises struct.error (open fails), "jpeg" where
// it raises SyntaxError/TypeError/KeyError (treated as plain JPEG), "mpo" for > 1 images.
mp_verdict classify_mp(std::span<const uint8_t> mp, bool ultra_hdr) {
  if (mp.size() < 8) return mp_verdict::jpeg;
  const bool mm = std::memcmp(mp.data(), "MM", 2) == 0;
  const bool ii = std::memcmp(mp.data(), "II", 2) == 0;
  const uint8_t b2 = mp[2], b3 = mp[3];
  const bool classic = (mm || ii) && ((b2 == 0 && b3 == 0x2A) || (b2 == 0x2A && b3 == 0));
  if (!classic) return mp_verdict::jpeg;  // not a TIFF header, or BigTIFF (needs 16 bytes)
  const bool ifd_be = mm;
  const bool entries_be = std::memcmp(mp.data(), "MM\0*", 4) == 0;
  auto u16 = [&](const uint8_t* p) { return ifd_be ? read_be16(p) : read_le16(p); };
  auto u32 = [&](const uint8_t* p) { return ifd_be ? read_be32(p) : read_le32(p); };
  const uint32_t ifd = u32(mp.data() + 4);
  std::optional<ifd_entry> count_tag, entries_tag;
  if (ifd <= mp.size() && mp.size() - ifd >= 2) {
    const uint16_t n = u16(mp.data() + ifd);
    size_t pos = size_t{ifd} + 2;
    static constexpr int unit[17] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8};
    for (uint32_t i = 0; i < n; ++i, pos += 12) {
      if (mp.size() - pos < 12) break;  // OSError inside load: keep what was read
      const uint16_t tag = u16(mp.data() + pos);
      const uint16_t type = u16(mp.data() + pos + 2);
      const uint32_t count = u32(mp.data() + pos + 4);
      if (type > 16 || unit[type] == 0) continue;  // unknown type: skipped
      const uint64_t size = uint64_t{count} * unit[type];
      std::span<const uint8_t> data;
      if (size > 4) {
        const uint32_t offset = u32(mp.data() + pos + 8);
        if (offset > mp.size() || mp.size() - offset < size) break;  // _safe_read OSError
        data = mp.subspan(offset, size);
      } else {
        data = mp.subspan(pos + 8, size);
      }
      if (data.empty()) continue;
      if (tag == 0xB001) count_tag = ifd_entry{type, count, data};
      if (tag == 0xB002) entries_tag = ifd_entry{type, count, data};
    }
  }
  if (!count_tag) return mp_verdict::jpeg;  // "no number of images"
  // Only integer types with a single value give an int; anything else fails range() (TypeError).
  int64_t quant = 0;
  const auto& q = *count_tag;
  if (q.count != 1) return mp_verdict::jpeg;
  switch (q.type) {
    case 1: quant = q.data[0]; break;
    case 6: quant = static_cast<int8_t>(q.data[0]); break;
    case 3: quant = u16(q.data.data()); break;
    case 8: quant = static_cast<int16_t>(u16(q.data.data())); break;
    case 4: case 13: quant = u32(q.data.data()); break;
    case 9: quant = static_cast<int32_t>(u32(q.data.data())); break;
    default: return mp_verdict::jpeg;
  }
  if (!entries_tag || entries_tag->type != 7) return mp_verdict::jpeg;  // KeyError / TypeError
  const auto raw = entries_tag->data;
  for (int64_t k = 0; k < quant; ++k) {
    const uint64_t at = static_cast<uint64_t>(k) * 16;
    if (at + 16 > raw.size()) return mp_verdict::broken;  // struct.error escapes jpeg_factory
    const uint32_t attribute = entries_be ? read_be32(raw.data() + at) : read_le32(raw.data() + at);
    if (((attribute >> 24) & 7) != 0) return mp_verdict::jpeg;  // "unsupported picture format"
  }
  if (quant <= 1 || ultra_hdr) return mp_verdict::jpeg;
  return mp_verdict::mpo;
}

}  // namespace

std::optional<jpeg_header> read_jpeg_header(std::span<const uint8_t> file) {
  if (file.size() < 3 || file[0] != 0xFF || file[1] != 0xD8 || file[2] != 0xFF) {
    return std::nullopt;
  }
  jpeg_header header;
  bool has_mode = false;
  size_t pos = 3;
  int current = 0xFF;  // Pillow's one-byte `s`; -1 when a read hit end of file
  std::vector<std::span<const uint8_t>> icc;
  std::span<const uint8_t> mp;
  bool has_mp = false;
  bool ultra_hdr = false;
  auto read1 = [&]() { return pos < file.size() ? int{file[pos++]} : -1; };
  // Reads a marker segment: 2-byte length (struct.error when missing), then length - 2 bytes.
  auto read_segment = [&](std::span<const uint8_t>& out) {
    if (file.size() - pos < 2) return false;
    const int n = int{read_be16(file.data() + pos)} - 2;
    pos += 2;
    if (n <= 0) {
      out = {};
      return true;
    }
    if (file.size() - pos < static_cast<size_t>(n)) return false;  // "Truncated File Read"
    out = file.subspan(pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return true;
  };
  for (;;) {
    if (current < 0) return std::nullopt;  // s[0] on empty bytes: IndexError
    if (current != 0xFF) {
      current = read1();  // skip non-0xFF junk
      continue;
    }
    if (pos >= file.size()) return std::nullopt;  // i16 of one byte: struct.error
    const unsigned marker = file[pos++];
    if (marker >= 0xC0 && marker <= 0xFE) {
      std::span<const uint8_t> s;
      if (is_sof(marker)) {
        if (!read_segment(s) || s.size() < 6) return std::nullopt;
        header.width = read_be16(s.data() + 3);
        header.height = read_be16(s.data() + 1);
        if (s[0] != 8) return std::nullopt;  // "cannot handle N-bit layers"
        const int layers = s[5];
        if (layers != 1 && layers != 3 && layers != 4) return std::nullopt;
        header.layers = layers;
        has_mode = true;
        if (marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE) {
          header.progressive = true;
        }
        if (!icc.empty()) {
          const auto smallest = *std::min_element(
              icc.begin(), icc.end(), [](std::span<const uint8_t> a, std::span<const uint8_t> b) {
                return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
              });
          if (smallest.size() < 14) return std::nullopt;  // icclist[0][13]: IndexError
          icc.clear();
        }
        if ((s.size() - 6) % 3 != 0) return std::nullopt;  // a partial component: IndexError
      } else if (marker == 0xDB) {
        if (!read_segment(s)) return std::nullopt;
        while (!s.empty()) {
          const size_t qt_length = 1 + (s[0] / 16 == 0 ? 1 : 2) * 64;
          if (s.size() < qt_length) return std::nullopt;  // "bad quantization table marker"
          s = s.subspan(qt_length);
        }
      } else if (marker >= 0xE0 && marker <= 0xEF) {
        if (!read_segment(s)) return std::nullopt;
        if (marker == 0xE0 && starts_with(s, "JFIF")) {
          if (s.size() < 7) return std::nullopt;  // i16(s, 5)
        } else if (marker == 0xE1 && starts_with(s, {"Exif\0\0", 6})) {
        } else if (marker == 0xE2 && starts_with(s, {"ICC_PROFILE\0", 12})) {
          icc.push_back(s);
        } else if (marker == 0xED && starts_with(s, {"Photoshop 3.0\0", 14})) {
          if (!photoshop_ok(s)) return std::nullopt;
        } else if (marker == 0xEE && starts_with(s, "Adobe")) {
          if (s.size() < 7) return std::nullopt;  // i16(s, 5)
        } else if (marker == 0xE2 && starts_with(s, {"MPF\0", 4})) {
          mp = s.subspan(4);
          has_mp = true;
        }
        if (marker == 0xE1 && contains(s, " hdrgm:Version=\"")) ultra_hdr = true;
      } else if (marker == 0xFE || marker == 0xC4 || marker == 0xCC || marker == 0xDA ||
                 marker == 0xDC || marker == 0xDD || marker == 0xDF) {
        if (!read_segment(s)) return std::nullopt;
      }
      // JPG, RSTn, SOI, EOI and JPGn have no handler.
      if (marker == 0xDA) break;  // start of scan: the header is complete
      current = read1();
    } else if (marker == 0xFF) {
      current = 0xFF;  // fill byte
    } else if (marker == 0x00) {
      current = read1();
    } else {
      return std::nullopt;  // "no marker found"
    }
  }
  if (!has_mode || header.width == 0 || header.height == 0) return std::nullopt;
  if (has_mp) {
    const mp_verdict verdict = classify_mp(mp, ultra_hdr);
    if (verdict == mp_verdict::broken) return std::nullopt;
    header.is_mpo = verdict == mp_verdict::mpo;
  }
  return header;
}

}  // namespace cua_s1
