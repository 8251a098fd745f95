// The server binary's graceful shutdown: on the first SIGINT/SIGTERM, or when the backend has
// become unusable, the engine turns unready, the listener closes and the admitted work is
// answered; then the io_context stops. A second signal, or work left at the drain timeout,
// exits the process with 1 at once.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "actors/decision_engine.hpp"
#include "http/http_server.hpp"

namespace cua_s1 {

class graceful_shutdown {
 public:
  // A drain is given `drain_timeout` to finish. Nothing is watched before watch().
  graceful_shutdown(boost::asio::io_context& io, std::chrono::seconds drain_timeout);

  graceful_shutdown(const graceful_shutdown&) = delete;
  graceful_shutdown& operator=(const graceful_shutdown&) = delete;

  // The engine's on_backend_unusable: logs fatal_backend_error and drains as after a signal,
  // then the exit code is 1. The engine may call it from any thread; `*this` must outlive it.
  std::function<void(const std::string& reason)> backend_unusable_handler();

  // Takes SIGINT and SIGTERM from here on and drains `engine` and `server` when one comes (or
  // when the backend has failed). Call once, before the io_context runs.
  void watch(decision_engine& engine, http_server& server);

  // 0 after a clean shutdown, 1 after a fatal backend error.
  int exit_code() const { return exit_code_.load(); }

 private:
  void on_signal(const boost::system::error_code& error, int signal);
  void wait_for_signal();
  void begin_drain();
  void check_drained();

  boost::asio::io_context& io_;
  // Signals, the drain timer and a drain begun by a backend error run here one at a time.
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer drain_timer_;
  const std::chrono::seconds drain_timeout_;
  std::chrono::steady_clock::time_point drain_deadline_;
  decision_engine* engine_ = nullptr;  // set by watch()
  http_server* server_ = nullptr;
  std::atomic<int> exit_code_{0};
};

}  // namespace cua_s1
