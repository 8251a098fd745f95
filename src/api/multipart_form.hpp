// A multipart/form-data body (RFC 7578) split into its named parts, strictly and within bounds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

inline constexpr size_t max_form_parts = 8;                  // more parts get 413
inline constexpr size_t max_form_bytes = 8 * 1024 * 1024;    // a larger body gets 413

struct form_part {
  std::string name;          // Content-Disposition: form-data; name="..."
  std::string content_type;  // its Content-Type header as sent, empty when absent
  std::string content;       // the raw bytes between its headers and the next delimiter
};

struct multipart_form {
  std::vector<form_part> parts;  // in body order; names are unique

  // The part named `name`, or nullptr.
  const form_part* find(std::string_view name) const;
};

// The boundary parameter of a `multipart/form-data; boundary=...` Content-Type value (quoted or
// not; 1 to 70 characters of RFC 2046's set), or 400 when there is none or it is malformed.
outcome<std::string> multipart_boundary(std::string_view content_type);

// Splits `body` sent with Content-Type `content_type`. 400: a missing or malformed boundary, a body
// that does not start with the first delimiter or does not end with the close delimiter (an
// optional CRLF after it, nothing else), a malformed part header, a Content-Disposition that is
// not form-data with a name, two parts of one name; 413: more than max_form_parts parts or a body
// over max_form_bytes.
outcome<multipart_form> parse_multipart_form(std::string_view content_type, std::string_view body);

}  // namespace cua_s1
