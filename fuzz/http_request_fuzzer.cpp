// libFuzzer target: raw bytes through Beast's request parser (with the server's limits), the
// header checks of src/http that read raw header values (message framing, the request target,
// Origins) and, for a complete POST, the request preparer behind it.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>

#include "api/decision_request.hpp"
#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "http/message_framing.hpp"
#include "http/origin_policy.hpp"
#include "http/request_target.hpp"

namespace http = boost::beast::http;

namespace {

// Framing the server accepts is unambiguous: chunked exactly when a Transfer-Encoding is present,
// and then without Content-Length. An origin-form target's path has no query. Origins are
// checked against a list read from the request itself (X-Allowed-Origins).
void check_header_stage(const http::request_header<>& header, bool chunked) {
  if (!cua_s1::message_framing_error(header)) {
    const bool encoded = header.count(http::field::transfer_encoding) > 0;
    if (chunked != encoded) __builtin_trap();
    if (encoded && header.count(http::field::content_length) > 0) __builtin_trap();
  }
  const std::string_view target(header.target());
  const cua_s1::request_target parts = cua_s1::parse_request_target(target);
  if (target.starts_with('/') &&
      (parts.path.find('?') != std::string_view::npos || !target.starts_with(parts.path)))
    __builtin_trap();
  const auto listed = cua_s1::parse_allowed_origins(std::string_view(header["X-Allowed-Origins"]));
  const std::string_view authority =
      parts.authority.empty() ? std::string_view(header[http::field::host]) : parts.authority;
  (void)cua_s1::origin_allowed(std::string_view(header[http::field::origin]), authority,
                               listed ? *listed : std::vector<std::string>{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.body_limit(cua_s1::max_body_bytes);
  parser.header_limit(64 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(data, size), ec);
  if (ec == http::error::need_more) {
    parser.put_eof(ec);
  }
  (void)used;
  if (parser.is_header_done()) check_header_stage(parser.get().base(), parser.chunked());
  if (!parser.is_done()) return 0;
  const auto& request = parser.get();
  if (request.method() == http::verb::post && request.target() == "/v1/systemone") {
    auto parsed = cua_s1::parse_strict_json(request.body());
    if (parsed) (void)cua_s1::validate_request(std::move(*parsed));
  }
  return 0;
}
