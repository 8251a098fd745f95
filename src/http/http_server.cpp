// Beast HTTP/1.1 sessions as Asio coroutines: body limit, timeouts, routing, JSON responses.
#include "http/http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <optional>

#include "api/decision_answer.hpp"
#include "api/python_json.hpp"
#include "common/json_log.hpp"
#include "http/active_request.hpp"
#include "http/request_id.hpp"
#include "http/request_record.hpp"
#include "http/websocket_session.hpp"

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using response_type = http::response<http::string_body>;

response_type json_response(unsigned version, bool keep_alive, int status, std::string body) {
  response_type response{static_cast<http::status>(status), version};
  response.set(http::field::content_type, "application/json");
  response.keep_alive(keep_alive);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

response_type detail_response(unsigned version, bool keep_alive, int status, std::string detail) {
  return json_response(version, keep_alive, status, serialize_error({status, std::move(detail)}));
}

std::string health_body(const decision_engine& engine, const http_options& options) {
  if (!engine.ready()) return std::string("{\"status\":\"") + engine.unready_state() + "\"}";
  std::string out = "{\"status\":\"ready\",\"model\":\"";
  append_json_string_body(out, engine.identity());
  out += "\",\"modality\":\"multimodal\",\"backend\":\"";
  append_json_string_body(out, engine.backend_description());
  out += "\",\"weights\":\"";
  append_json_string_body(out, options.weights_description);
  out += "\"}";
  return out;
}

// Media type of a Content-Type value without parameters, lower-cased.
std::string media_type(beast::string_view value) {
  std::string type(value.substr(0, value.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  size_t first = type.find_first_not_of(" \t");
  type = first == std::string::npos ? std::string() : type.substr(first);
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type;
}

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

// While a decision waits, notices a client that closes its connection (EOF or reset) and sets
// the decision's cancel flag; bytes of a pipelined next request end the watch without it.
// Runs on the session's strand; stop() before the socket is used again.
class disconnect_watch {
 public:
  explicit disconnect_watch(tcp::socket& socket) : state_(std::make_shared<state>()) {
    socket.async_wait(tcp::socket::wait_read,
                      [&socket, state = state_](const boost::system::error_code& ec) {
      if (ec || !state->watching) return;  // stopped: the answer is ready
      char byte;
      const ssize_t got = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        state->cancelled->store(true);
    });
  }
  const cancel_flag& flag() const { return state_->cancelled; }
  void stop(tcp::socket& socket) {
    state_->watching = false;
    beast::error_code ignored;
    socket.cancel(ignored);
  }

 private:
  struct state {
    cancel_flag cancelled = std::make_shared<std::atomic<bool>>(false);
    bool watching = true;
  };
  std::shared_ptr<state> state_;
};

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

asio::awaitable<void> run_session(tcp::socket socket, decision_engine& engine,
                                  const http_options& options,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets) {
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
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (deadline.disarm()) {
      if (!parser.got_some() && buffer.size() == 0) break;  // an idle keep-alive connection
      ec = beast::error::timeout;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset)
      break;
    if (ec) {
      int status = 400;
      std::string detail = "malformed HTTP request";
      if (ec == http::error::body_limit) status = 413, detail = "request exceeds body limit";
      else if (ec == beast::error::timeout) status = 408, detail = "request timed out";
      else if (ec == http::error::header_limit) status = 431, detail = "request header too large";
      auto response = detail_response(11, false, status, detail);
      const std::string request_id = request_id_for(parser.get()["X-Request-Id"]);
      response.set("X-Request-Id", request_id);
      engine.metrics().count_request("unparsed", status);
      log_event(log_level::info, "request_rejected",
                {{"request_id", request_id}, {"status", status}, {"error", ec.message()}});
      stream.expires_after(std::chrono::seconds(5));
      co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    stream.expires_never();
    if (parser.get().target() == websocket_route && beast::websocket::is_upgrade(parser.get())) {
      co_await run_websocket_session(std::move(stream), parser.release(), engine, active,
                                     websockets);
      co_return;
    }
    std::optional<active_request> counted;
    counted.emplace(*active);
    auto request = parser.release();
    const auto started = std::chrono::steady_clock::now();
    const std::string request_id = request_id_for(request["X-Request-Id"]);
    const unsigned version = request.version();
    const bool keep_alive = request.keep_alive() && !engine.draining();
    const std::string target(request.target());
    const bool is_get = request.method() == http::verb::get || request.method() == http::verb::head;
    std::string route = target;
    response_type response;
    auto method_not_allowed = [&](const char* allow) {
      response = detail_response(version, keep_alive, 405, "method not allowed");
      response.set(http::field::allow, allow);
    };
    if (target == websocket_route) {
      response = detail_response(version, keep_alive, 426, "WebSocket upgrade required");
      response.set(http::field::upgrade, "websocket");
    } else if (target == "/v1/systemone") {
      auto content_type = request[http::field::content_type];
      if (request.method() != http::verb::post) {
        method_not_allowed("POST");
      } else if (!content_type.empty() && media_type(content_type) != "application/json") {
        response = detail_response(version, keep_alive, 415, "Content-Type must be application/json");
      } else if (!engine.ready()) {
        response = detail_response(version, keep_alive, 503, engine.unavailable_detail());
        response.set(http::field::retry_after, "1");
      } else {
        disconnect_watch watch(stream.socket());
        decision_response decided = co_await engine.async_decide(
            std::move(request.body()), request_id, watch.flag(), asio::use_awaitable);
        watch.stop(stream.socket());
        response = json_response(version, keep_alive, decided.status, std::move(decided.body));
        if (decided.retry_after_seconds > 0)
          response.set(http::field::retry_after, std::to_string(decided.retry_after_seconds));
      }
    } else if (target == "/health" || target == "/health/ready") {
      if (!is_get) method_not_allowed("GET");
      else response = json_response(version, keep_alive, engine.ready() ? 200 : 503,
                                    health_body(engine, options));
    } else if (target == "/health/live") {
      if (!is_get) method_not_allowed("GET");
      else response = json_response(version, keep_alive, 200, "{\"status\":\"alive\"}");
    } else if (target == "/metrics") {
      if (!is_get) {
        method_not_allowed("GET");
      } else {
        response = response_type{http::status::ok, version};
        response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        response.keep_alive(keep_alive);
        response.body() = engine.metrics().exposition(
            static_cast<int64_t>(engine.queued_requests()), engine.identity(),
            options.weights_description, engine.backend_description(), engine.ready());
        response.prepare_payload();
      }
    } else {
      route = "other";
      response = detail_response(version, keep_alive, 404, "unknown route");
    }
    response.set("X-Request-Id", request_id);
    record_request(engine.metrics(), route, static_cast<int>(response.result_int()), request_id,
                   started);
    stream.expires_after(options.read_timeout);
    co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
    counted.reset();
    if (ec || !keep_alive || engine.draining()) break;
  }
  co_await lingering_close(stream);
}

asio::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor, decision_engine& engine,
                                  const http_options& options,
                                  std::shared_ptr<std::atomic<size_t>> active,
                                  std::shared_ptr<websocket_registry> websockets) {
  while (acceptor->is_open()) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor->async_accept(
        asio::make_strand(acceptor->get_executor()), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) break;
      log_event(log_level::warning, "accept_failed", {{"error", ec.message()}});
      continue;
    }
    auto executor = socket.get_executor();
    asio::co_spawn(executor, run_session(std::move(socket), engine, options, active, websockets),
                   asio::detached);
  }
}

}  // namespace

http_server::http_server(asio::io_context& io, decision_engine& engine, http_options options)
    : io_(io), engine_(engine), options_(std::move(options)) {}

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
  asio::co_spawn(io_, accept_loop(acceptor_, engine_, options_, active_, websockets_),
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
