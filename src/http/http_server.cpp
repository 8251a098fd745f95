// The transport of HTTP/1.1 as Asio coroutines: the listener, and per connection the reads
// (header, then body, under one deadline), the disconnect watch, the writes and the lingering
// close. What to answer is src/http/routes.
#include "http/http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <optional>

#include "api/decision_request.hpp"
#include "common/json_log.hpp"
#include "http/active_request.hpp"
#include "http/body_budget.hpp"
#include "http/connection_limits.hpp"
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

// Ends our side, then reads and discards what the client still sends (bounded in time), so a
// client that is still writing a refused body (413, 400) reads our answer instead of a reset.
asio::awaitable<void> lingering_close(beast::tcp_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  stream.expires_after(std::chrono::seconds(2));
  std::array<char, 64 * 1024> discard;
  while (!ec)
    co_await stream.async_read_some(asio::buffer(discard), asio::redirect_error(asio::use_awaitable, ec));
}

// Writes `response`; only its header when it answers a HEAD request (RFC 9110 section 9.3.2:
// the header of the GET's answer, Content-Length included, and no body).
asio::awaitable<void> write_response(beast::tcp_stream& stream, http_response& response,
                                     bool header_only, beast::error_code& ec) {
  http::response_serializer<http::string_body> serializer(response);
  if (header_only)
    co_await http::async_write_header(stream, serializer,
                                      asio::redirect_error(asio::use_awaitable, ec));
  else
    co_await http::async_write(stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
}

// The interim answer to Expect: 100-continue: the headers passed, the client may send its body.
asio::awaitable<void> write_continue(beast::tcp_stream& stream, beast::error_code& ec) {
  http::response<http::empty_body> interim{http::status::continue_, 11};
  co_await http::async_write(stream, interim, asio::redirect_error(asio::use_awaitable, ec));
}

// The time allowed to read one request. Unlike tcp_stream's own timeout, which closes the
// socket, it only cancels the read, so that a 408 can still be written. Runs on the session's
// strand.
class read_deadline {
 public:
  read_deadline(beast::tcp_stream& stream, std::chrono::steady_clock::duration limit)
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

// Serves one connection; `held` counts it among the open connections until it is closed.
asio::awaitable<void> run_session(tcp::socket socket, [[maybe_unused]] shared_capacity::hold held,
                                  decision_engine& engine, const http_options& options,
                                  const route_settings& settings,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets,
                                  shared_capacity bodies) {
  beast::tcp_stream stream(std::move(socket));
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
    stream.expires_never();
    read_deadline deadline(stream, options.read_timeout);
    // The header stage plans the request as soon as its headers are in. Every plan, a refusal
    // included, is answered once the body has been read too, so that the connection stays
    // usable and a body over the limit is answered 413 whatever its route; but a client that
    // waits for "100 Continue" gets a refusal at once, and the connection closes.
    std::optional<request_plan> plan;
    // A request counts as active from its first byte: one still being read when a drain begins
    // is read and answered.
    std::optional<active_request> counted;
    bool body_unread = false;  // refused before its body was read: the connection then closes
    if (buffer.size() == 0)
      co_await stream.socket().async_wait(tcp::socket::wait_read,
                                          asio::redirect_error(asio::use_awaitable, ec));
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
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset)
      break;
    if (ec) {
      auto response = unreadable_request_response(ec, parser.get().base(), engine.metrics());
      const bool to_head = parser.is_header_done() && parser.get().method() == http::verb::head;
      stream.expires_after(std::chrono::seconds(5));
      co_await write_response(stream, response, to_head, ec);
      break;
    }
    stream.expires_never();
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
    std::optional<disconnect_watch> watch;
    cancel_flag client_gone;
    if (plan->awaits_decision())
      client_gone = watch.emplace(stream.socket(), request.version() >= 11).flag();
    http_response response =
        co_await route(std::move(*plan), std::move(request), engine, settings, client_gone);
    body_held.reset();
    if (watch) {
      watch->stop(stream.socket());
      if (watch->stream_broken()) break;
    }
    response.keep_alive(keep_alive);
    stream.expires_after(options.read_timeout);
    co_await write_response(stream, response, to_head, ec);
    counted.reset();
    if (ec || !keep_alive || engine.draining()) break;
  }
  co_await lingering_close(stream);
}

// A connection beyond --max-connections: answered 503 at once, then closed.
asio::awaitable<void> refuse_connection(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  http_response response = too_many_connections_response();
  beast::error_code ec;
  stream.expires_after(std::chrono::seconds(5));
  co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) co_await lingering_close(stream);
}

asio::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor, decision_engine& engine,
                                  const http_options& options, const route_settings& settings,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets,
                                  connection_counter connections, shared_capacity bodies) {
  log_throttle accept_errors, refusals;
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
      asio::co_spawn(executor, refuse_connection(std::move(socket)), asio::detached);
      continue;
    }
    asio::co_spawn(executor,
                   run_session(std::move(socket), std::move(*held), engine, options, settings,
                               active, websockets, bodies),
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
