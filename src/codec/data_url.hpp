// Parses a `data:image/png;base64,` / `data:image/jpeg;base64,` URL and strictly decodes its base64;
// builds one from raw bytes (an image sent as a multipart part).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
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

// The URL's prefix for `mime`: "data:image/png;base64," or "data:image/jpeg;base64,".
std::string_view image_data_url_prefix(image_mime mime);

// `bytes` as a data URL of `mime` (standard base64 with padding), which parse_image_data_url
// decodes back to `bytes`.
std::string make_image_data_url(image_mime mime, std::string_view bytes);

}  // namespace cua_s1
