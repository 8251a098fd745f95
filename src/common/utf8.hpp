// UTF-8 helpers: strict validation (as Python's "utf-8" codec), code point counting, encoding.
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

// Appends the UTF-8 encoding of `code_point` (which must not be a surrogate) to `out`.
void append(std::string& out, uint32_t code_point);

}  // namespace cua_s1::utf8
