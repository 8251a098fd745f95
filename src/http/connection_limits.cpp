// The connection count, its refusal, and the accept error back-off.
#include "http/connection_limits.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <cerrno>

#include "api/decision_answer.hpp"
#include "http/response_headers.hpp"
#include "common/json_log.hpp"

namespace cua_s1 {

namespace asio = boost::asio;
namespace http = boost::beast::http;

http_response too_many_connections_response() {
  http_response response{http::status::service_unavailable, 11};
  response.set(http::field::content_type, "application/json");
  set_retry_after(response, 1);
  response.body() = serialize_error({503, "too many connections, retry later"});
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

void log_connection_refused(const connection_counter& connections, log_throttle& throttle) {
  if (auto count = throttle.occurred())
    log_event(log_level::warning, "connection_refused",
              {{"max_connections", connections.limit()}, {"refused", static_cast<int64_t>(*count)}});
}

asio::awaitable<void> after_accept_error(const boost::system::error_code& error,
                                         log_throttle& throttle) {
  const int code = error.value();
  const bool out_of_resources = error.category() == boost::system::system_category() &&
                                (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM);
  if (auto count = throttle.occurred())
    log_event(log_level::warning, "accept_failed",
              {{"error", error.message()}, {"failures", static_cast<int64_t>(*count)},
               {"retry_in_ms", static_cast<int64_t>(out_of_resources ? accept_backoff.count() : 0)}});
  if (!out_of_resources) co_return;
  asio::steady_timer pause(co_await asio::this_coro::executor, accept_backoff);
  boost::system::error_code ignored;
  co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace cua_s1
