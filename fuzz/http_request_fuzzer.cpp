// libFuzzer target: raw bytes through Beast's request parser (with the server's limits) and,
// for a complete POST, the request preparer behind it.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>

#include "api/decision_request.hpp"
#include "api/request_validation.hpp"
#include "api/strict_json.hpp"

namespace http = boost::beast::http;

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
  if (!parser.is_done()) return 0;
  const auto& request = parser.get();
  if (request.method() == http::verb::post && request.target() == "/v1/systemone") {
    auto parsed = cua_s1::parse_strict_json(request.body());
    if (parsed) (void)cua_s1::validate_request(std::move(*parsed));
  }
  return 0;
}
