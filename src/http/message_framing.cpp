// Request framing checks beyond Beast's parser (see message_framing.hpp).
#include "http/message_framing.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <iterator>

namespace cua_s1 {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

beast::string_view trimmed(beast::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

}  // namespace

beast::error_code message_framing_error(const http::request_header<>& header) {
  const auto encodings = header.equal_range(http::field::transfer_encoding);
  const auto lengths = header.equal_range(http::field::content_length);
  const auto encoding_fields = std::distance(encodings.first, encodings.second);
  const auto length_fields = std::distance(lengths.first, lengths.second);
  if (encoding_fields > 0) {
    if (encoding_fields > 1 || length_fields > 0 ||
        !beast::iequals(trimmed(encodings.first->value()), "chunked"))
      return http::error::bad_transfer_encoding;
  }
  if (length_fields > 1 ||
      (length_fields == 1 && lengths.first->value().find(',') != beast::string_view::npos))
    return http::error::multiple_content_length;
  return {};
}

}  // namespace cua_s1
