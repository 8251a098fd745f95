// Graceful shutdown: the signal handlers, the drain and its deadline, and the forced exits.
#include "server/graceful_shutdown.hpp"

#include <boost/asio/post.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "common/json_log.hpp"

namespace cua_s1 {

graceful_shutdown::graceful_shutdown(boost::asio::io_context& io,
                                     std::chrono::seconds drain_timeout)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      signals_(strand_),
      drain_timer_(strand_),
      drain_timeout_(drain_timeout) {}

std::function<void(const std::string&)> graceful_shutdown::backend_unusable_handler() {
  return [this](const std::string& reason) {
    log_event(log_level::error, "fatal_backend_error",
              {{"detail", reason},
               {"action", "answering the admitted requests, then exiting with code 1"}});
    exit_code_ = 1;
    boost::asio::post(strand_, [this] { begin_drain(); });
  };
}

void graceful_shutdown::watch(decision_engine& engine, http_server& server) {
  engine_ = &engine;
  server_ = &server;
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  wait_for_signal();
}

void graceful_shutdown::wait_for_signal() {
  signals_.async_wait(
      [this](const boost::system::error_code& error, int signal) { on_signal(error, signal); });
}

// The first signal begins the drain; a second one, while it runs, exits 1 at once.
void graceful_shutdown::on_signal(const boost::system::error_code& error, int signal) {
  if (error) return;
  if (engine_->draining()) {
    log_event(log_level::warning, "forced_shutdown", {{"signal", signal}, {"exit_code", 1}});
    std::fflush(stderr);
    std::_Exit(1);
  }
  log_event(log_level::info, "shutdown",
            {{"signal", signal},
             {"active_requests", static_cast<int64_t>(server_->active_requests())},
             {"queued_requests", static_cast<int64_t>(engine_->queued_requests())},
             {"drain_timeout_s", static_cast<int64_t>(drain_timeout_.count())}});
  wait_for_signal();
  begin_drain();
}

// Unready (new decisions get 503), no new connections, WebSocket clients asked to close; then
// check_drained waits for the admitted work. Once only, whatever began it.
void graceful_shutdown::begin_drain() {
  if (!engine_ || engine_->draining()) return;  // not watching yet, or already draining
  engine_->begin_drain();
  server_->stop_accepting();
  drain_deadline_ = std::chrono::steady_clock::now() + drain_timeout_;
  check_drained();
}

// Stops the io_context once no request is in flight, queued or on an open WebSocket; exits 1
// at once (without waiting for that work in destructors) when the drain deadline passes first.
void graceful_shutdown::check_drained() {
  const size_t active = server_->active_requests(), queued = engine_->queued_requests();
  if (active == 0 && queued == 0 && server_->open_websockets() == 0) {
    log_event(log_level::info, "drained");
    return io_.stop();
  }
  if (std::chrono::steady_clock::now() >= drain_deadline_) {
    log_event(log_level::error, "drain_timeout",
              {{"active_requests", static_cast<int64_t>(active)},
               {"queued_requests", static_cast<int64_t>(queued)},
               {"open_websockets", static_cast<int64_t>(server_->open_websockets())},
               {"exit_code", 1}});
    std::fflush(stderr);
    std::_Exit(1);
  }
  drain_timer_.expires_after(std::chrono::milliseconds(20));
  drain_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) check_drained();
  });
}

}  // namespace cua_s1
