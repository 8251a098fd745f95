// cua-s1-server: wires the cua_s1 library into a process (options, logging, model, engine, HTTP
// server, graceful shutdown, I/O threads, warmup). Everything else is the cua_s1 library, usable
// from other Asio hosts without this file.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "actors/decision_engine.hpp"
#include "common/json_log.hpp"
#include "http/http_server.hpp"
#include "http/tls_context.hpp"
#include "server/graceful_shutdown.hpp"
#include "server/open_file_limit.hpp"
#include "server/serving_model.hpp"
#include "server/server_options.hpp"

using namespace cua_s1;

namespace {

log_level level_from(const std::string& name) {
  if (name == "debug") return log_level::debug;
  if (name == "warning") return log_level::warning;
  if (name == "error") return log_level::error;
  return log_level::info;
}

engine_options engine_settings(const server_options& options, const serving_model& loaded,
                               graceful_shutdown& shutdown) {
  engine_options settings;
  settings.decode_threads = options.decode_threads;
  settings.limits = {options.max_queued_requests, options.max_queued_questions};
  settings.identity = loaded.identity;
  settings.request_timeout = std::chrono::seconds(options.request_timeout_seconds);
  settings.batching = {options.max_batch_requests, options.max_batch_tokens,
                       options.max_batch_patches};
  settings.batch_wait = std::chrono::microseconds(options.batch_wait_us);
  settings.on_backend_unusable = shutdown.backend_unusable_handler();
  return settings;
}

http_options http_settings(const server_options& options, const serving_model& loaded,
                           std::shared_ptr<boost::asio::ssl::context> tls) {
  http_options settings;
  settings.tls = std::move(tls);
  settings.host = options.host;
  settings.port = options.port;
  settings.allowed_origins = options.allowed_origins;
  settings.read_timeout = std::chrono::seconds(options.read_timeout_seconds);
  settings.max_connections = options.max_connections;
  settings.max_body_bytes_in_flight = options.max_body_bytes_in_flight;
  settings.weights_description = loaded.description;
  settings.api_keys = options.api_keys;
  settings.metrics_require_key = options.metrics_require_key;
  return settings;
}

// Without a key, a server bound beyond loopback answers anyone who reaches it: say so.
void warn_if_open_beyond_loopback(const server_options& options) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(options.host, ec);
  if (!options.api_keys.empty() || (!ec && address.is_loopback())) return;
  log_event(log_level::warning, "no_api_key",
            {{"host", options.host},
             {"detail", "listening beyond loopback without an API key: anyone who reaches it "
                        "may use it (see --api-key)"}});
}

std::vector<std::thread> run_io_threads(boost::asio::io_context& io, unsigned count) {
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < count; ++i) threads.emplace_back([&io] { io.run(); });
  return threads;
}

void join_all(std::vector<std::thread>& threads) {
  for (auto& thread : threads) thread.join();
}

}  // namespace

int main(int argc, char** argv) {
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
  std::shared_ptr<boost::asio::ssl::context> tls;  // checked before the model loads
  if (!options->tls_certificate_file.empty()) {
    auto context = make_server_tls_context(options->tls_certificate_file, options->tls_key_file);
    if (!context) {
      std::fprintf(stderr, "cua-s1-server: %s\n", context.error().detail.c_str());
      return 2;
    }
    tls = std::move(*context);
  }
  log_event(log_level::info, "starting", {{"model", options->model_dir.empty()
                                                        ? std::string("bundled tiny model")
                                                        : options->model_dir}});
  raise_open_file_limit(options->max_connections);
  warn_if_open_beyond_loopback(*options);

  auto loaded = load_serving_model(*options);
  if (!loaded) {
    log_event(log_level::error, "model_load_failed", {{"detail", loaded.error().detail}});
    std::fprintf(stderr, "cua-s1-server: cannot load the model: %s\n", loaded.error().detail.c_str());
    return 1;
  }
  log_event(log_level::info, "model_loaded",
            {{"weights", loaded->description}, {"model_dir", loaded->model_dir},
             {"adapter_dir", loaded->adapter_dir}, {"backend", loaded->model->description()}});

  boost::asio::io_context io;
  graceful_shutdown shutdown(io, std::chrono::seconds(options->drain_timeout_seconds));
  decision_engine engine(io.get_executor(), loaded->preparer, std::move(loaded->model),
                         engine_settings(*options, *loaded, shutdown));

  // Listen first so that probes see 503 {"status":"starting"} during the warmup decision.
  http_server server(io, engine, http_settings(*options, *loaded, std::move(tls)));
  if (auto started = server.start(); !started) {
    log_event(log_level::error, "listen_failed", {{"detail", started.error().detail}});
    std::fprintf(stderr, "cua-s1-server: %s\n", started.error().detail.c_str());
    return 1;
  }
  log_event(log_level::info, "listening",
            {{"host", options->host}, {"port", static_cast<int64_t>(server.bound_port())},
             {"tls", !options->tls_certificate_file.empty()}});
  shutdown.watch(engine, server);

  std::vector<std::thread> io_threads = run_io_threads(io, 2);
  if (auto warm = engine.warm_up(); !warm) {
    log_event(log_level::error, "warmup_failed", {{"detail", warm.error().detail}});
    std::fprintf(stderr, "cua-s1-server: the warmup decision failed: %s\n",
                 warm.error().detail.c_str());
    io.stop();
    join_all(io_threads);
    return 1;
  }
  log_event(log_level::info, "ready",
            {{"host", options->host}, {"port", static_cast<int64_t>(server.bound_port())},
             {"model", loaded->identity}, {"weights", loaded->description}});
  join_all(io_threads);
  log_event(log_level::info, "stopped", {{"exit_code", shutdown.exit_code()}});
  return shutdown.exit_code();
}
