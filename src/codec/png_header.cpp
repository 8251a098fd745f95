// Pillow 11.3.0 PngImagePlugin semantics (read for facts only): chunk walk, handler checks, CRCs.
#include "codec/png_header.hpp"

#include <cstring>
#include <string_view>

#include "codec/bounded_inflate.hpp"
#include "codec/byte_reader.hpp"
#include "codec/crc32.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

constexpr uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

enum class chunk_kind {
  unknown, IHDR, PLTE, tRNS, gAMA, cHRM, sRGB, iCCP, pHYs, tEXt, zTXt, iTXt, eXIf,
  acTL, fcTL, IDAT, fdAT, IEND, DDAT
};

chunk_kind classify(const uint8_t* cid) {
  static constexpr std::pair<std::string_view, chunk_kind> names[] = {
      {"IHDR", chunk_kind::IHDR}, {"PLTE", chunk_kind::PLTE}, {"tRNS", chunk_kind::tRNS},
      {"gAMA", chunk_kind::gAMA}, {"cHRM", chunk_kind::cHRM}, {"sRGB", chunk_kind::sRGB},
      {"iCCP", chunk_kind::iCCP}, {"pHYs", chunk_kind::pHYs}, {"tEXt", chunk_kind::tEXt},
      {"zTXt", chunk_kind::zTXt}, {"iTXt", chunk_kind::iTXt}, {"eXIf", chunk_kind::eXIf},
      {"acTL", chunk_kind::acTL}, {"fcTL", chunk_kind::fcTL}, {"IDAT", chunk_kind::IDAT},
      {"fdAT", chunk_kind::fdAT}, {"IEND", chunk_kind::IEND}, {"DDAT", chunk_kind::DDAT},
  };
  for (const auto& [name, kind] : names) {
    if (std::memcmp(name.data(), cid, 4) == 0) return kind;
  }
  return chunk_kind::unknown;
}

// Pillow's is_cid: four bytes matching the regex \w (ASCII letters, digits, underscore).
bool is_chunk_name(const uint8_t* cid) {
  for (int i = 0; i < 4; ++i) {
    const uint8_t c = cid[i];
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_';
    if (!word) return false;
  }
  return true;
}

}  // namespace

bool supported_mode(uint8_t bit_depth, uint8_t color_type) {
  switch (color_type) {
    case 0: return bit_depth == 1 || bit_depth == 2 || bit_depth == 4 || bit_depth == 8 ||
                   bit_depth == 16;
    case 2: case 4: case 6: return bit_depth == 8 || bit_depth == 16;
    case 3: return bit_depth == 1 || bit_depth == 2 || bit_depth == 4 || bit_depth == 8;
    default: return false;
  }
}

namespace {

struct chunk_ref {
  size_t pos = 0;  // offset of the length field
  uint32_t length = 0;
  const uint8_t* cid = nullptr;
};

// Reads the 8-byte chunk header at pos the way ChunkStream.read does; false where Pillow raises.
bool read_chunk_header(std::span<const uint8_t> file, size_t pos, chunk_ref& out) {
  if (pos > file.size() || file.size() - pos < 8) return false;
  out.pos = pos;
  out.length = read_be32(file.data() + pos);
  out.cid = file.data() + pos + 4;
  return is_chunk_name(out.cid);
}

// Pillow's MAX_TEXT_CHUNK (one compressed text or ICC chunk inflates to at most this) and
// MAX_TEXT_MEMORY (the text of all chunks together); beyond either it raises ValueError.
constexpr size_t max_text_chunk = 1024 * 1024;
constexpr uint64_t max_text_memory = 64 * max_text_chunk;

// _safe_zlib_decompress: false where Pillow raises (too large); a corrupt stream is Pillow's
// caught zlib.error, reported through `corrupt`.
bool safe_zlib_decompress(std::span<const uint8_t> stream, std::vector<uint8_t>& out,
                          bool& corrupt) {
  auto inflated = bounded_zlib_inflate(stream, max_text_chunk);
  if (inflated.verdict == bounded_inflate_result::too_large) return false;
  corrupt = inflated.verdict == bounded_inflate_result::corrupt;
  out = std::move(inflated.output);
  return true;
}

// check_text_memory: false once the text seen so far exceeds MAX_TEXT_MEMORY.
bool count_text(png_stream_state& st, uint64_t characters) {
  st.text_memory += characters;
  return st.text_memory <= max_text_memory;
}

// The position of the first NUL at or after `from`, or s.size().
size_t find_nul(std::span<const uint8_t> s, size_t from = 0) {
  while (from < s.size() && s[from] != 0) ++from;
  return from;
}

// chunk_iTXt: only a compressed text that inflates too large, or too much text, raises.
bool check_itxt(std::span<const uint8_t> s, png_stream_state& st) {
  const size_t key_end = find_nul(s);
  if (key_end == s.size() || s.size() - (key_end + 1) < 2) return true;
  const bool compressed = s[key_end + 1] != 0;
  const uint8_t method = s[key_end + 2];
  const std::span<const uint8_t> rest = s.subspan(key_end + 3);
  const size_t lang_end = find_nul(rest);
  if (lang_end == rest.size()) return true;
  const size_t tag_end = find_nul(rest, lang_end + 1);
  if (tag_end == rest.size()) return true;
  std::span<const uint8_t> text = rest.subspan(tag_end + 1);
  std::vector<uint8_t> inflated;
  if (compressed) {
    if (method != 0) return true;
    bool corrupt = false;
    if (!safe_zlib_decompress(text, inflated, corrupt)) return false;
    if (corrupt) return true;
    text = inflated;
  }
  auto as_text = [](std::span<const uint8_t> bytes) {
    return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  const auto lang = as_text(rest.first(lang_end));
  const auto tag = as_text(rest.subspan(lang_end + 1, tag_end - lang_end - 1));
  if (!utf8::is_valid(lang) || !utf8::is_valid(tag) || !utf8::is_valid(as_text(text)))
    return true;  // UnicodeError: the chunk is skipped
  return count_text(st, utf8::code_point_count(as_text(text)));
}

bool payload_available(std::span<const uint8_t> file, const chunk_ref& c) {
  return file.size() - (c.pos + 8) >= c.length;
}

// The checks of Pillow's chunk_<name> handlers on a complete payload (also used after IDAT).
// Returns false where the handler raises.
bool run_handler(chunk_kind kind, std::span<const uint8_t> s, png_stream_state& st) {
  switch (kind) {
    case chunk_kind::IHDR: {
      if (s.size() < 13) return false;
      st.width = read_be32(s.data());
      st.height = read_be32(s.data() + 4);
      if (supported_mode(s[8], s[9])) {
        st.has_mode = true;
        st.bit_depth = s[8];
        st.color_type = s[9];
      }
      if (s[12] != 0) st.interlaced = true;
      return s[11] == 0;  // "unknown filter category"
    }
    case chunk_kind::PLTE:
      if (st.has_mode && st.color_type == 3) {
        st.has_palette = true;
        st.palette = s;
      }
      return true;
    case chunk_kind::tRNS:
      if (!st.has_mode) return true;
      if (st.color_type == 0) return s.size() >= 2;
      if (st.color_type == 2) return s.size() >= 6;
      return true;
    case chunk_kind::gAMA: return s.size() >= 4;
    case chunk_kind::cHRM: return s.size() % 4 == 0;
    case chunk_kind::sRGB: return !s.empty();
    case chunk_kind::pHYs: return s.size() >= 9;
    case chunk_kind::iCCP: {
      // comp_method = s[s.find(b"\0") + 1]; find() == -1 reads s[0]; the profile follows.
      const size_t i = find_nul(s);
      const size_t method_at = (i == s.size()) ? 0 : i + 1;
      if (method_at >= s.size() || s[method_at] != 0) return false;
      std::vector<uint8_t> profile;
      bool corrupt = false;
      return safe_zlib_decompress(s.subspan(method_at + 1), profile, corrupt);
    }
    case chunk_kind::tEXt: {
      const size_t key_end = find_nul(s);
      if (key_end == 0) return true;  // no key: nothing stored or counted
      return count_text(st, key_end == s.size() ? 0 : s.size() - key_end - 1);
    }
    case chunk_kind::zTXt: {
      const size_t key_end = find_nul(s);
      std::span<const uint8_t> compressed;  // v[1:]
      if (key_end + 1 < s.size()) {
        if (s[key_end + 1] != 0) return false;  // "Unknown compression method"
        compressed = s.subspan(key_end + 2);
      }
      std::vector<uint8_t> text;
      bool corrupt = false;
      if (!safe_zlib_decompress(compressed, text, corrupt)) return false;
      if (key_end == 0) return true;
      return count_text(st, corrupt ? 0 : text.size());
    }
    case chunk_kind::iTXt: return check_itxt(s, st);
    case chunk_kind::acTL: {
      if (s.size() < 8) return false;
      if (st.n_frames) {
        st.n_frames.reset();  // a second acTL: "Invalid APNG"
        return true;
      }
      const uint32_t n = read_be32(s.data());
      if (n == 0 || n > 0x80000000u) return true;
      st.n_frames = n;
      return true;
    }
    case chunk_kind::fcTL: {
      if (s.size() < 26) return false;
      const uint32_t seq = read_be32(s.data());
      if ((!st.seq_num && seq != 0) || (st.seq_num && uint64_t{*st.seq_num} + 1 != seq)) {
        return false;
      }
      st.seq_num = seq;
      const uint64_t w = read_be32(s.data() + 4), h = read_be32(s.data() + 8);
      const uint64_t px = read_be32(s.data() + 12), py = read_be32(s.data() + 16);
      if (px + w > st.width || py + h > st.height) return false;
      st.has_bbox = true;
      st.bbox_x = static_cast<uint32_t>(px);
      st.bbox_y = static_cast<uint32_t>(py);
      st.bbox_w = static_cast<uint32_t>(w);
      st.bbox_h = static_cast<uint32_t>(h);
      return true;
    }
    default: return true;  // eXIf and unknown chunks never raise on content
  }
}

// chunk_fdAT's own checks on its 4-byte sequence number.
bool check_fdat(std::span<const uint8_t> file, const chunk_ref& c, png_stream_state& st) {
  if (c.length < 4) return false;
  if (file.size() - (c.pos + 8) < 4) return false;
  const uint32_t seq = read_be32(file.data() + c.pos + 8);
  if (!st.seq_num || uint64_t{*st.seq_num} + 1 != seq) return false;
  st.seq_num = seq;
  return true;
}

}  // namespace

std::optional<png_header> read_png_header(std::span<const uint8_t> file) {
  if (file.size() < 8 || std::memcmp(file.data(), png_magic, 8) != 0) return std::nullopt;
  png_header header;
  png_stream_state& st = header.state;
  size_t pos = 8;
  for (;;) {
    chunk_ref c;
    if (!read_chunk_header(file, pos, c)) return std::nullopt;
    const chunk_kind kind = classify(c.cid);
    if (kind == chunk_kind::IDAT || kind == chunk_kind::fdAT) {
      if (kind == chunk_kind::fdAT && !check_fdat(file, c, st)) return std::nullopt;
      if (!st.has_bbox && st.n_frames) st.default_image = true;
      header.first_data_chunk = c.pos;
      break;
    }
    if (kind == chunk_kind::IEND) break;  // opens, but there is nothing to load
    if (!payload_available(file, c)) return std::nullopt;  // _safe_read: "Truncated File Read"
    const std::span<const uint8_t> payload = file.subspan(c.pos + 8, c.length);
    if (!run_handler(kind, payload, st)) return std::nullopt;
    // Every chunk before the image data has its CRC verified (critical and ancillary alike).
    const size_t crc_at = c.pos + 8 + c.length;
    if (file.size() - crc_at < 4) return std::nullopt;
    const uint32_t crc = crc32_update(crc32_update(0, c.cid, 4), payload.data(), payload.size());
    if (crc != read_be32(file.data() + crc_at)) return std::nullopt;
    pos = crc_at + 4;
  }
  // ImageFile: "not identified by this driver" without a mode or with an empty size.
  if (!st.has_mode || st.width == 0 || st.height == 0) return std::nullopt;
  header.frames = st.n_frames ? *st.n_frames : 1;
  if (st.n_frames && st.default_image) header.frames += 1;
  return header;
}

std::optional<png_image_data> collect_png_image_data(std::span<const uint8_t> file,
                                                     png_header& header) {
  png_image_data data;
  if (!header.first_data_chunk) return data;
  size_t pos = *header.first_data_chunk;
  bool first = true;
  for (;;) {
    chunk_ref c;
    if (!read_chunk_header(file, pos, c)) break;
    const chunk_kind kind = classify(c.cid);
    size_t skip = 0;
    if (kind == chunk_kind::fdAT) {
      if (!first && !check_fdat(file, c, header.state)) return std::nullopt;
      skip = 4;
    } else if (kind != chunk_kind::IDAT && kind != chunk_kind::DDAT) {
      break;
    }
    first = false;
    const size_t start = c.pos + 8 + skip;
    const size_t available = start <= file.size() ? file.size() - start : 0;
    const size_t want = c.length - skip;
    data.segments.push_back({start, want < available ? want : available});
    data.end = start + want;
    if (want >= available) break;  // the file ends inside this chunk
    pos = start + want + 4;        // the CRC after image data is read but never checked
  }
  return data;
}

bool check_png_trailing_chunks(std::span<const uint8_t> file, size_t after_data,
                               png_header& header) {
  size_t pos = after_data + 4;  // skip the CRC of the last data chunk
  for (;;) {
    chunk_ref c;
    if (!read_chunk_header(file, pos, c)) return true;  // struct.error / SyntaxError: stop
    const chunk_kind kind = classify(c.cid);
    if (kind == chunk_kind::IEND) return true;
    if (kind == chunk_kind::fdAT && !check_fdat(file, c, header.state)) return false;
    if (!payload_available(file, c)) return false;  // _safe_read raises on truncation
    if (kind != chunk_kind::IDAT && kind != chunk_kind::fdAT && kind != chunk_kind::DDAT &&
        !run_handler(kind, file.subspan(c.pos + 8, c.length), header.state)) {
      return false;
    }
    pos = c.pos + 8 + c.length + 4;
  }
}

}  // namespace cua_s1
