// cua-s1-server: options, model loading, warmup, the HTTP server, signals. Everything else is
// the cua_s1 library, usable from other Asio hosts without this file.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "actors/decision_engine.hpp"
#include "common/json_log.hpp"
#include "http/http_server.hpp"
#include "server/serving_model.hpp"
#include "server/server_options.hpp"

namespace {

cua_s1::log_level level_from(const std::string& name) {
  if (name == "debug") return cua_s1::log_level::debug;
  if (name == "warning") return cua_s1::log_level::warning;
  if (name == "error") return cua_s1::log_level::error;
  return cua_s1::log_level::info;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cua_s1;
  auto options = parse_server_options(std::vector<std::string>(argv + 1, argv + argc),
                                      [](const char* name) { return std::getenv(name); });
  if (!options) {
    std::fprintf(stderr, "cua-s1-server: %s\n", options.error().detail.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(server_usage().c_str(), stdout);
    return 0;
  }
  set_log_level(level_from(options->log_level));
  log_event(log_level::info, "starting", {{"model", options->model_dir.empty()
                                                        ? std::string("bundled tiny model")
                                                        : options->model_dir}});

  auto loaded = load_serving_model(*options);
  if (!loaded) {
    log_event(log_level::error, "model_load_failed", {{"detail", loaded.error().detail}});
    std::fprintf(stderr, "cua-s1-server: cannot load the model: %s\n", loaded.error().detail.c_str());
    return 1;
  }
  log_event(log_level::info, "model_loaded",
            {{"weights", loaded->description}, {"backend", loaded->model->description()}});

  boost::asio::io_context io;
  engine_options engine_settings;
  engine_settings.decode_threads = options->decode_threads;
  engine_settings.limits = {options->max_queued_requests, options->max_queued_questions};
  engine_settings.identity = loaded->identity;
  engine_settings.request_timeout = std::chrono::seconds(options->request_timeout_seconds);
  std::atomic<int> exit_code{0};
  std::function<void()> begin_shutdown;  // set once the server exists
  engine_settings.on_backend_unusable = [&](const std::string& reason) {
    log_event(log_level::error, "fatal_backend_error",
              {{"detail", reason},
               {"action", "answering the admitted requests, then exiting with code 1"}});
    exit_code = 1;
    boost::asio::post(io, [&] { if (begin_shutdown) begin_shutdown(); });
  };
  decision_engine engine(io.get_executor(), loaded->preparer, std::move(loaded->model),
                         engine_settings);

  // Listen first so that probes see 503 {"status":"starting"} during the warmup decision.
  http_options http_settings;
  http_settings.host = options->host;
  http_settings.port = options->port;
  http_settings.read_timeout = std::chrono::seconds(options->read_timeout_seconds);
  http_settings.weights_description = loaded->description;
  http_server server(io, engine, http_settings);
  auto started = server.start();
  if (!started) {
    log_event(log_level::error, "listen_failed", {{"detail", started.error().detail}});
    std::fprintf(stderr, "cua-s1-server: %s\n", started.error().detail.c_str());
    return 1;
  }
  log_event(log_level::info, "listening",
            {{"host", options->host}, {"port", static_cast<int64_t>(server.bound_port())}});

  // Graceful shutdown, on the first signal or a fatal device error: unready, no new
  // connections, admitted work answered, then exit (0, or 1 after a device error; 1 at once when
  // --drain-timeout passes first); a second signal exits 1 at once.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  boost::asio::steady_timer drain_timer(io);
  const auto drain_deadline_after = std::chrono::seconds(options->drain_timeout_seconds);
  std::chrono::steady_clock::time_point drain_deadline;
  std::function<void()> check_drained = [&] {
    const size_t active = server.active_requests(), queued = engine.queued_requests();
    if (active == 0 && queued == 0 && server.open_websockets() == 0) {
      log_event(log_level::info, "drained");
      return io.stop();
    }
    if (std::chrono::steady_clock::now() >= drain_deadline) {
      log_event(log_level::error, "drain_timeout",
                {{"active_requests", static_cast<int64_t>(active)},
                 {"queued_requests", static_cast<int64_t>(queued)},
                 {"open_websockets", static_cast<int64_t>(server.open_websockets())},
                 {"exit_code", 1}});
      std::fflush(stderr);
      std::_Exit(1);  // work is still running: do not wait for it in destructors
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) check_drained();
    });
  };
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int signal) {
        if (ec) return;
        if (engine.draining()) {
          log_event(log_level::warning, "forced_shutdown", {{"signal", signal}, {"exit_code", 1}});
          std::fflush(stderr);
          std::_Exit(1);
        }
        log_event(log_level::info, "shutdown",
                  {{"signal", signal},
                   {"active_requests", static_cast<int64_t>(server.active_requests())},
                   {"queued_requests", static_cast<int64_t>(engine.queued_requests())},
                   {"drain_timeout_s", static_cast<int64_t>(options->drain_timeout_seconds)}});
        signals.async_wait(on_signal);
        begin_shutdown();
      };
  begin_shutdown = [&] {
    if (engine.draining()) return;  // already draining
    engine.begin_drain();
    server.stop_accepting();
    drain_deadline = std::chrono::steady_clock::now() + drain_deadline_after;
    check_drained();
  };
  signals.async_wait(on_signal);

  const unsigned io_threads = 2;
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < io_threads; ++i) threads.emplace_back([&io] { io.run(); });
  auto join_all = [&threads] {
    for (auto& t : threads) t.join();
  };

  auto warm = engine.warm_up();
  if (!warm) {
    log_event(log_level::error, "warmup_failed", {{"detail", warm.error().detail}});
    std::fprintf(stderr, "cua-s1-server: the warmup decision failed: %s\n",
                 warm.error().detail.c_str());
    io.stop();
    join_all();
    return 1;
  }
  log_event(log_level::info, "ready",
            {{"host", options->host}, {"port", static_cast<int64_t>(server.bound_port())},
             {"model", loaded->identity}, {"weights", loaded->description}});
  join_all();
  log_event(log_level::info, "stopped", {{"exit_code", exit_code.load()}});
  return exit_code.load();
}
