// UTF-8 helpers: strict validation (as Python's "utf-8" codec), code point counting, decoding
// and encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cua_s1::utf8 {

// True when `text` is well-formed UTF-8: no overlongs, no surrogates, nothing above U+10FFFF.
bool is_valid(std::string_view text);

// Number of code points in well-formed UTF-8 (Python's len() of the decoded str).
size_t code_point_count(std::string_view text);

// A decoded code point and its length in bytes. Invalid input decodes as one byte with
// code_point = 0xFFFFFFFF (never a valid code point), so callers always advance.
struct decoded {
  uint32_t code_point;
  uint32_t length;
};

inline constexpr uint32_t invalid = 0xFFFFFFFFu;

// Decodes the code point starting at text[pos] (pos < text.size()).
inline decoded decode(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  const size_t left = text.size() - pos;
  const unsigned char b0 = s[0];
  if (b0 < 0x80) return {b0, 1};
  auto cont = [&](size_t i) { return i < left && (s[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 < 0xE0 && cont(1)) return {((b0 & 0x1Fu) << 6) | (s[1] & 0x3Fu), 2};
  if (b0 >= 0xE0 && b0 < 0xF0 && cont(1) && cont(2)) {
    const uint32_t cp = ((b0 & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
  } else if (b0 >= 0xF0 && b0 < 0xF5 && cont(1) && cont(2) && cont(3)) {
    const uint32_t cp =
        ((b0 & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
    if (cp >= 0x10000 && cp < 0x110000) return {cp, 4};
  }
  return {invalid, 1};
}

// Appends the UTF-8 encoding of `cp` (which must not be a surrogate) to `out`.
inline void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace cua_s1::utf8
