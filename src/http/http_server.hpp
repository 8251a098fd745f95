// The HTTP front end: a Beast listener and sessions over the decision engine.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/decision_engine.hpp"
#include "common/outcome.hpp"
#include "http/body_budget.hpp"
#include "http/connection_limits.hpp"
#include "http/routes.hpp"
#include "http/websocket_session.hpp"

namespace boost::asio::ssl {
class context;
}

namespace cua_s1 {

struct http_options {
  std::string host = "127.0.0.1";
  unsigned short port = 8000;
  // A request (header and body) must arrive within this; a WebSocket reply write must progress.
  std::chrono::seconds read_timeout{15};
  size_t max_connections = 1024;  // open at once; more are answered 503 and closed
  size_t max_body_bytes_in_flight = 256u << 20;  // bodies held at once; beyond: 503 unread
  std::string weights_description;        // e.g. "bundled tiny model", shown in /health
  std::vector<std::string> allowed_origins;  // web pages besides our own (origin_policy.hpp)
  std::vector<std::string> api_keys;  // none: no key needed (route_settings)
  bool metrics_require_key = false;   // /metrics needs a key too
  // Set: every connection speaks TLS (http/tls_context.hpp), its handshake within read_timeout.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

// Serves the routes of src/http/routes (POST /v1/systemone, the WebSocket /v1/systemone/ws,
// GET /health, /health/live, /health/ready and /metrics), over TLS when options.tls is set.
// Until the engine is ready (warmup done) health answers 503 {"status":"starting"} and decisions
// 503 with Retry-After. Runs on the io_context it is given; each connection is a coroutine on
// its own strand.
class http_server {
 public:
  http_server(boost::asio::io_context& io, decision_engine& engine, http_options options);

  // Binds and starts accepting; a failure names the address.
  outcome<bool> start();
  // Stops accepting new connections (in-flight requests finish) and asks each WebSocket
  // client to go: close 1001 once its replies are written.
  void stop_accepting();

  // Requests begun (from their first byte) whose response has not been written yet (graceful
  // shutdown waits for 0, so a request still being uploaded when it begins is answered).
  size_t active_requests() const { return active_->load(); }
  // WebSocket connections that have not sent their close frame yet.
  size_t open_websockets() const { return websockets_->open(); }

  unsigned short bound_port() const { return bound_port_; }

 private:
  boost::asio::io_context& io_;
  decision_engine& engine_;
  http_options options_;
  route_settings route_settings_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::shared_ptr<std::atomic<size_t>> active_ = std::make_shared<std::atomic<size_t>>(0);
  std::shared_ptr<websocket_registry> websockets_ = std::make_shared<websocket_registry>();
  connection_counter connections_{options_.max_connections};
  shared_capacity bodies_{options_.max_body_bytes_in_flight};
  unsigned short bound_port_ = 0;
};

}  // namespace cua_s1
