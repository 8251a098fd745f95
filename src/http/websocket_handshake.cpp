// The upgrade request's checks, in the order of Beast's websocket accept (Boost 1.81), answered
// as our JSON errors.
#include "http/websocket_handshake.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/error.hpp>

#include "api/decision_answer.hpp"
#include "http/response_headers.hpp"

namespace cua_s1 {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using websocket_error = beast::websocket::error;

// The longest Sec-WebSocket-Key Beast takes: the base64 of 16 bytes.
constexpr size_t max_key_size = 24;

// The first check of Beast's accept that `upgrade` fails, if any.
std::optional<websocket_error> first_failed_check(const http_request& upgrade) {
  const auto has_token = [&](http::field field, const char* token) {
    return http::token_list{upgrade[field]}.exists(token);
  };
  if (upgrade.version() != 11) return websocket_error::bad_http_version;
  if (upgrade.method() != http::verb::get) return websocket_error::bad_method;
  if (upgrade.count(http::field::host) == 0) return websocket_error::no_host;
  if (upgrade.count(http::field::connection) == 0) return websocket_error::no_connection;
  if (!has_token(http::field::connection, "upgrade")) return websocket_error::no_connection_upgrade;
  if (upgrade.count(http::field::upgrade) == 0) return websocket_error::no_upgrade;
  if (!has_token(http::field::upgrade, "websocket")) return websocket_error::no_upgrade_websocket;
  const auto key = upgrade.find(http::field::sec_websocket_key);
  if (key == upgrade.end()) return websocket_error::no_sec_key;
  if (key->value().size() > max_key_size) return websocket_error::bad_sec_key;
  const auto version = upgrade.find(http::field::sec_websocket_version);
  if (version == upgrade.end()) return websocket_error::no_sec_version;
  if (version->value() != "13") return websocket_error::bad_sec_version;
  return std::nullopt;
}

}  // namespace

std::optional<http_response> websocket_handshake_refusal(const http_request& upgrade,
                                                         const std::string& request_id) {
  const std::optional<websocket_error> failed = first_failed_check(upgrade);
  if (!failed) return std::nullopt;
  const int status = *failed == websocket_error::bad_sec_version ? 426 : 400;
  http_response response{static_cast<http::status>(status), upgrade.version()};
  if (status == 426) response.set(http::field::sec_websocket_version, "13");
  response.set(http::field::content_type, "application/json");
  set_request_id(response, request_id);
  response.body() = serialize_error({status, make_error_code(*failed).message()});
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

}  // namespace cua_s1
