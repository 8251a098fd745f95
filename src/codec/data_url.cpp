// Data URL prefix handling and a table-driven strict base64 decoder.
#include "codec/data_url.hpp"

#include <array>
#include <string>

#include "codec/codec_errors.hpp"

namespace cua_s1 {
namespace {

constexpr std::string_view png_prefix = "data:image/png;base64,";
constexpr std::string_view jpeg_prefix = "data:image/jpeg;base64,";
constexpr uint32_t bad = 0xFFFFFFFFu;

// Four tables, one per position in a quad, holding the sextet already shifted into its place
// of the 24-bit group; invalid characters map to all-ones so one OR of four lookups detects
// them (a valid group never exceeds 24 bits).
struct quad_tables {
  std::array<uint32_t, 256> t[4];
};

constexpr quad_tables make_tables() {
  quad_tables q{};
  for (int pos = 0; pos < 4; ++pos) {
    for (int c = 0; c < 256; ++c) q.t[pos][c] = bad;
  }
  constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (uint32_t v = 0; v < 64; ++v) {
    const auto c = static_cast<unsigned char>(alphabet[v]);
    q.t[0][c] = v << 18;
    q.t[1][c] = v << 12;
    q.t[2][c] = v << 6;
    q.t[3][c] = v;
  }
  return q;
}

constexpr quad_tables tables = make_tables();

inline uint32_t lookup(int pos, char c) { return tables.t[pos][static_cast<unsigned char>(c)]; }

}  // namespace

bool decode_base64_strict(std::string_view text, std::vector<uint8_t>& out) {
  out.clear();
  const size_t n = text.size();
  if (n % 4 != 0) return false;
  if (n == 0) return true;
  // Only the last quad may carry padding: "xx==" or "xxx=".
  size_t pad = 0;
  if (text[n - 1] == '=') pad = (text[n - 2] == '=') ? 2 : 1;
  out.resize(n / 4 * 3 - pad);
  const char* in = text.data();
  uint8_t* dst = out.data();
  const size_t full_quads = n / 4 - (pad ? 1 : 0);
  uint32_t error = 0;
  for (size_t q = 0; q < full_quads; ++q, in += 4, dst += 3) {
    const uint32_t v = lookup(0, in[0]) | lookup(1, in[1]) | lookup(2, in[2]) | lookup(3, in[3]);
    error |= v;
    dst[0] = static_cast<uint8_t>(v >> 16);
    dst[1] = static_cast<uint8_t>(v >> 8);
    dst[2] = static_cast<uint8_t>(v);
  }
  if ((error & 0xFF000000u) != 0) return false;
  if (pad == 0) return true;
  // Last quad with padding; '=' is not in the tables, so a misplaced '=' in the data part fails.
  uint32_t v = lookup(0, in[0]) | lookup(1, in[1]);
  if (pad == 1) v |= lookup(2, in[2]);
  if ((v & 0xFF000000u) != 0) return false;
  dst[0] = static_cast<uint8_t>(v >> 16);
  if (pad == 1) dst[1] = static_cast<uint8_t>(v >> 8);
  return true;
}

outcome<data_url_payload> parse_image_data_url(std::string_view data_url) {
  data_url_payload payload;
  std::string_view encoded;
  if (data_url.starts_with(png_prefix)) {
    payload.mime = image_mime::png;
    encoded = data_url.substr(png_prefix.size());
  } else if (data_url.starts_with(jpeg_prefix)) {
    payload.mime = image_mime::jpeg;
    encoded = data_url.substr(jpeg_prefix.size());
  } else {
    return unprocessable(std::string(codec_errors::bad_prefix));
  }
  if (encoded.size() > max_encoded_image_chars) {
    return unprocessable(std::string(codec_errors::encoded_too_long));
  }
  if (!decode_base64_strict(encoded, payload.bytes)) {
    return unprocessable(std::string(codec_errors::invalid_data));
  }
  if (payload.bytes.size() > max_decoded_image_bytes) {
    return unprocessable(std::string(codec_errors::decoded_too_long));
  }
  return payload;
}

std::string_view image_data_url_prefix(image_mime mime) {
  return mime == image_mime::png ? png_prefix : jpeg_prefix;
}

std::string make_image_data_url(image_mime mime, std::string_view bytes) {
  constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string_view prefix = image_data_url_prefix(mime);
  std::string url;
  url.reserve(prefix.size() + (bytes.size() + 2) / 3 * 4);
  url += prefix;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift : {18, 12, 6, 0}) url += alphabet[(v >> shift) & 63];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    url += alphabet[(v >> 18) & 63];
    url += alphabet[(v >> 12) & 63];
    url += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    url += '=';
  }
  return url;
}

}  // namespace cua_s1
