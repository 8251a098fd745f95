// Parses a `data:image/png;base64,` / `data:image/jpeg;base64,` URL and strictly decodes its base64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

enum class image_mime { png, jpeg };

inline constexpr size_t max_encoded_image_chars = 5'592'408;  // 4 * ceil(4 MiB / 3)
inline constexpr size_t max_decoded_image_bytes = 4'194'304;  // 4 MiB

struct data_url_payload {
  image_mime mime = image_mime::png;
  std::vector<uint8_t> bytes;
};

// Splits the prefix, checks the encoded length, decodes the base64 and checks the decoded length.
outcome<data_url_payload> parse_image_data_url(std::string_view data_url);

// Strict base64 like Python's base64.b64decode(s, validate=True): standard alphabet, length a
// multiple of 4, at most two '=' and only at the very end; non-canonical trailing bits accepted.
// Returns false (and leaves `out` unspecified) on any violation.
bool decode_base64_strict(std::string_view text, std::vector<uint8_t>& out);

}  // namespace cua_s1
