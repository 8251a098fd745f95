// The transport of HTTP/1.1 as Asio coroutines: the listener, the TLS handshake, and per
// connection the reads (header, then body, under one deadline), the disconnect watch, the writes
// and the lingering close. One session serves plain TCP and TLS streams alike (a template over
// the stream; src/http/connection_stream holds the steps that differ). What to answer is
// src/http/routes.
#include "http/http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <optional>

#include "api/decision_answer.hpp"
#include "api/decision_request.hpp"
#include "common/json_log.hpp"
#include "http/active_request.hpp"
#include "http/body_budget.hpp"
#include "http/connection_limits.hpp"
#include "http/connection_stream.hpp"
#include "http/disconnect_watch.hpp"
#include "http/message_framing.hpp"
#include "http/routes.hpp"
#include "http/websocket_session.hpp"

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Writes `response`; only its header when it answers a HEAD request (RFC 9110 section 9.3.2:
// the header of the GET's answer, Content-Length included, and no body).
template <class Stream>
asio::awaitable<void> write_response(Stream& stream, http_response& response,
                                     bool header_only, beast::error_code& ec) {
  http::response_serializer<http::string_body> serializer(response);
  if (header_only)
    co_await http::async_write_header(stream, serializer,
                                      asio::redirect_error(asio::use_awaitable, ec));
  else
    co_await http::async_write(stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
}

// The answer when routing itself failed: 500 {"detail": ...}, and the connection closes.
http_response internal_error_response() {
  http_response response{http::status::internal_server_error, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = serialize_error({500, "internal error"});
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

// The interim answer to Expect: 100-continue: the headers passed, the client may send its body.
template <class Stream>
asio::awaitable<void> write_continue(Stream& stream, beast::error_code& ec) {
  http::response<http::empty_body> interim{http::status::continue_, 11};
  co_await http::async_write(stream, interim, asio::redirect_error(asio::use_awaitable, ec));
}

// The time allowed to read one request. Unlike tcp_stream's own timeout, which closes the
// socket, it only cancels the read, so that a 408 can still be written. Runs on the session's
// strand; `stream` is the TCP layer (under TLS too).
class read_deadline {
 public:
  read_deadline(plain_stream& stream, std::chrono::steady_clock::duration limit)
      : timer_(stream.get_executor()), state_(std::make_shared<state>()) {
    timer_.expires_after(limit);
    timer_.async_wait([&stream, state = state_](const boost::system::error_code& ec) {
      if (ec || !state->armed) return;  // disarmed: the read is over, `stream` may be gone
      state->expired = true;
      beast::error_code ignored;
      stream.socket().cancel(ignored);
    });
  }
  ~read_deadline() { disarm(); }
  read_deadline(const read_deadline&) = delete;
  read_deadline& operator=(const read_deadline&) = delete;

  // Stops the clock; true when it had run out (and cancelled the read).
  bool disarm() {
    state_->armed = false;
    timer_.cancel();
    return state_->expired;
  }

 private:
  struct state {
    bool armed = true;
    bool expired = false;
  };
  asio::steady_timer timer_;
  std::shared_ptr<state> state_;
};

// Serves one connection over `stream` (plain_stream or tls_stream, its handshake done); `held`
// counts it among the open connections until it is closed.
template <class Stream>
asio::awaitable<void> run_session(Stream stream, [[maybe_unused]] shared_capacity::hold held,
                                  decision_engine& engine, const http_options& options,
                                  const route_settings& settings,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets,
                                  shared_capacity bodies) {
  plain_stream& tcp_layer = beast::get_lowest_layer(stream);
  // Beast reads into the free space of this buffer, at least 512 bytes and at most 64 KiB a
  // call; its capacity is only what the headers needed, so without room a 145 KB body took
  // ~280 reads of 512 bytes (each a recvmsg and a coroutine step).
  beast::flat_buffer buffer;
  buffer.reserve(64 * 1024);
  beast::error_code ec;
  while (true) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(max_body_bytes);
    parser.header_limit(64 * 1024);
    tcp_layer.expires_never();
    read_deadline deadline(tcp_layer, options.read_timeout);
    // The header stage plans the request as soon as its headers are in. Every plan, a refusal
    // included, is answered once the body has been read too, so that the connection stays
    // usable and a body over the limit is answered 413 whatever its route; but a client that
    // waits for "100 Continue" gets a refusal at once, and the connection closes.
    std::optional<request_plan> plan;
    // A request counts as active from its first byte: one still being read when a drain begins
    // is read and answered.
    std::optional<active_request> counted;
    bool body_unread = false;  // refused before its body was read: the connection then closes
    if (buffer.size() == 0) co_await wait_for_request(stream, buffer, ec);
    if (!ec) {
      counted.emplace(*active);
      co_await http::async_read_header(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!ec) ec = message_framing_error(parser.get().base());  // 400 and close: no smuggling
    // Its body is held within the body budget from here until it has been answered; beyond the
    // budget it is refused unread.
    std::optional<shared_capacity::hold> body_held;
    if (!ec) {
      plan = plan_request(parser.get().base(), engine, settings);
      body_held = bodies.try_take(body_bytes_to_hold(parser));
      if (!body_held) {
        refuse_over_body_budget(*plan, parser.get().version());
        body_unread = true;
      } else if (!parser.is_done() && plan->continue_expected) {
        if (plan->refusal)
          body_unread = true;
        else
          co_await write_continue(stream, ec);
      }
      if (!ec && !parser.is_done() && !body_unread)
        co_await http::async_read(stream, buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
    }
    if (deadline.disarm()) {
      if (!parser.got_some() && buffer.size() == 0) break;  // an idle keep-alive connection
      ec = beast::error::timeout;
    }
    if (connection_ended(ec)) break;
    if (ec) {
      auto response = unreadable_request_response(ec, parser.get().base(), engine.metrics());
      const bool to_head = parser.is_header_done() && parser.get().method() == http::verb::head;
      tcp_layer.expires_after(std::chrono::seconds(5));
      co_await write_response(stream, response, to_head, ec);
      break;
    }
    tcp_layer.expires_never();
    if (plan->to == request_plan::destination::websocket_upgrade) {
      counted.reset();  // the WebSocket session counts its messages itself
      body_held.reset();
      co_await run_websocket_session(std::move(stream), parser.release(), engine, active,
                                     websockets, options.read_timeout);
      co_return;
    }
    auto request = parser.release();
    const bool to_head = request.method() == http::verb::head;
    const bool keep_alive = request.keep_alive() && !engine.draining() && !body_unread;
    // A decision waits on the engine: a client that closes meanwhile cancels its work.
    std::optional<typename disconnect_watch_of<Stream>::type> watch;
    cancel_flag client_gone;
    if (plan->awaits_decision())
      client_gone = watch.emplace(stream, buffer, request.version() >= 11).flag();
    // route() answers every failure itself; should it throw all the same (out of memory), the
    // client gets a 500 and the disconnect watch is stopped below before the stream goes.
    std::optional<http_response> routed;
    try {
      routed = co_await route(std::move(*plan), std::move(request), engine, settings, client_gone);
    } catch (const std::exception& error) {
      log_event(log_level::error, "route_failed", {{"detail", std::string_view(error.what())}});
    }
    http_response response = routed ? std::move(*routed) : internal_error_response();
    body_held.reset();
    if (watch) {
      co_await watch->stop();
      if (watch->stream_broken()) break;
    }
    response.keep_alive(keep_alive && routed.has_value());
    tcp_layer.expires_after(options.read_timeout);
    co_await write_response(stream, response, to_head, ec);
    counted.reset();
    if (ec || !response.keep_alive() || engine.draining()) break;
  }
  co_await lingering_close(stream);
}

// Answers 503 on a connection beyond --max-connections, then closes it; the caller has set the
// time this may take.
template <class Stream>
asio::awaitable<void> write_refusal(Stream& stream) {
  http_response response = too_many_connections_response();
  beast::error_code ec;
  co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) co_await lingering_close(stream);
}

// A connection beyond --max-connections: answered 503 at once (over TLS once its handshake is
// done), then closed; `slot` (one of max_refusals_in_flight) is held meanwhile.
asio::awaitable<void> refuse_connection(tcp::socket socket,
                                        std::shared_ptr<asio::ssl::context> tls,
                                        [[maybe_unused]] shared_capacity::hold slot) {
  constexpr auto refusal_time = std::chrono::seconds(5);
  if (!tls) {
    plain_stream stream(std::move(socket));
    stream.expires_after(refusal_time);
    co_await write_refusal(stream);
    co_return;
  }
  tls_stream stream(std::move(socket), *tls);
  beast::get_lowest_layer(stream).expires_after(refusal_time);
  beast::error_code ec;
  co_await stream.async_handshake(asio::ssl::stream_base::server,
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) co_await write_refusal(stream);
}

// Serves one TLS connection once its handshake, bounded by the read timeout, is done. A failed
// handshake (a plain HTTP client, an old TLS version, a client that stalls) closes the
// connection; it is counted and logged rate-limited ("tls_handshake_failed").
asio::awaitable<void> run_tls_session(tcp::socket socket, shared_capacity::hold held,
                                      std::shared_ptr<asio::ssl::context> tls,
                                      std::shared_ptr<log_throttle> handshake_failures,
                                      decision_engine& engine, const http_options& options,
                                      const route_settings& settings,
                                      std::shared_ptr<std::atomic<size_t>> active,
                                      std::shared_ptr<websocket_registry> websockets,
                                      shared_capacity bodies) {
  tls_stream stream(std::move(socket), *tls);
  beast::get_lowest_layer(stream).expires_after(options.read_timeout);
  beast::error_code ec;
  co_await stream.async_handshake(asio::ssl::stream_base::server,
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    engine.metrics().tls_handshake_failures.fetch_add(1);
    if (auto count = handshake_failures->occurred())
      log_event(log_level::warning, "tls_handshake_failed",
                {{"error", ec == beast::error::timeout ? std::string("timed out") : ec.message()},
                 {"failures", static_cast<int64_t>(*count)}});
    co_return;
  }
  co_await run_session(std::move(stream), std::move(held), engine, options, settings, active,
                       websockets, bodies);
}

asio::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor, decision_engine& engine,
                                  const http_options& options, const route_settings& settings,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets,
                                  connection_counter connections, shared_capacity bodies) {
  log_throttle accept_errors, refusals;
  auto handshake_failures = std::make_shared<log_throttle>();
  shared_capacity refusing(max_refusals_in_flight);
  while (acceptor->is_open()) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor->async_accept(
        asio::make_strand(acceptor->get_executor()), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) break;
      co_await after_accept_error(ec, accept_errors);
      continue;
    }
    auto executor = socket.get_executor();
    auto held = connections.try_take(1);
    if (!held) {
      log_connection_refused(connections, refusals);
      // Refusals hold descriptors (and over TLS cost a handshake) for up to seconds: beyond
      // max_refusals_in_flight a connection is closed at once, unanswered.
      if (auto slot = refusing.try_take(1))
        asio::co_spawn(executor, refuse_connection(std::move(socket), options.tls, std::move(*slot)),
                       asio::detached);
      continue;
    }
    if (options.tls)
      asio::co_spawn(executor,
                     run_tls_session(std::move(socket), std::move(*held), options.tls,
                                     handshake_failures, engine, options, settings, active,
                                     websockets, bodies),
                     asio::detached);
    else
      asio::co_spawn(executor,
                     run_session(plain_stream(std::move(socket)), std::move(*held), engine,
                                 options, settings, active, websockets, bodies),
                     asio::detached);
  }
}

}  // namespace

http_server::http_server(asio::io_context& io, decision_engine& engine, http_options options)
    : io_(io),
      engine_(engine),
      options_(std::move(options)),
      route_settings_{options_.weights_description, options_.allowed_origins,
                      api_key_set(options_.api_keys), options_.metrics_require_key} {
  options_.api_keys.clear();  // only their digests are kept
}

outcome<bool> http_server::start() {
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.host, ec);
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  if (ec) return failure{500, "invalid bind address " + options_.host};
  acceptor_ = std::make_shared<tcp::acceptor>(io_);
  tcp::endpoint endpoint(address, options_.port);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return failure{500, "cannot listen on " + where + ": " + ec.message()};
  bound_port_ = acceptor_->local_endpoint().port();
  asio::co_spawn(io_,
                 accept_loop(acceptor_, engine_, options_, route_settings_, active_, websockets_,
                             connections_, bodies_),
                 asio::detached);
  return true;
}

void http_server::stop_accepting() {
  if (acceptor_) {
    beast::error_code ec;
    acceptor_->close(ec);
  }
  websockets_->close_all();
}

}  // namespace cua_s1
