// The server's own cost around the model: the real HTTP server and decision engine in process,
// with the bundled tiny model's tokenizer and an instant stand-in backend (the GPU path's
// picture, zero logits), and a client on one keep-alive connection. Per request: client latency,
// the decode + prepare stages, and what is left (HTTP read and write, JSON, validation,
// hand-offs between threads, response assembly) as p50 / p90 milliseconds.
//   http_path_bench REQUEST.json [--iterations N]
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "actors/decision_engine.hpp"
#include "http/http_server.hpp"
#include "server/serving_model.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

// Answers at once with zero logits; records each request's decode + prepare seconds.
class instant_backend : public cua_s1::backend {
 public:
  cua_s1::outcome<std::vector<cua_s1::question_logits>> run(
      const cua_s1::prepared_request& request) override {
    {
      std::lock_guard lock(mutex_);
      stage_ms_.push_back(1e3 * (request.decode_seconds + request.prepare_seconds));
    }
    std::vector<cua_s1::question_logits> out(request.questions.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i].logits.assign(request.questions[i].letter_ids.size(), 0.0f);
    return out;
  }
  std::string description() const override { return "instant"; }
  cua_s1::pixel_values_on pixel_values_made() const override {
    return cua_s1::pixel_values_on::backend;
  }
  std::vector<double> take_stage_ms() {
    std::lock_guard lock(mutex_);
    return std::exchange(stage_ms_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<double> stage_ms_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_path_bench REQUEST.json [--iterations N]\n");
    return 2;
  }
  int iterations = 300;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--iterations") iterations = std::max(1, std::stoi(argv[i + 1]));
  const std::string body = read_file(argv[1]);

  cua_s1::server_options options;
  options.threads = 1;
  auto loaded = cua_s1::load_serving_model(options);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().detail.c_str());
    return 1;
  }
  auto model = std::make_unique<instant_backend>();
  instant_backend* stand_in = model.get();
  boost::asio::io_context io;
  cua_s1::engine_options settings;
  cua_s1::decision_engine engine(io.get_executor(), loaded->preparer, std::move(model), settings);
  cua_s1::http_options http_settings;
  http_settings.port = 0;
  cua_s1::http_server server(io, engine, http_settings);
  if (!server.start()) return 1;
  std::vector<std::thread> io_threads;  // as the server binary: two I/O threads
  auto guard = boost::asio::make_work_guard(io);
  for (int i = 0; i < 2; ++i) io_threads.emplace_back([&io] { io.run(); });
  if (!engine.warm_up()) return 1;
  stand_in->take_stage_ms();

  boost::asio::io_context client_io;
  boost::asio::ip::tcp::socket socket(client_io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), server.bound_port()});
  socket.set_option(boost::asio::ip::tcp::no_delay(true));
  http::request<http::string_body> request{http::verb::post, "/v1/systemone", 11};
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  beast::flat_buffer buffer;
  std::vector<double> latency_ms;
  for (int i = 0; i < iterations + 10; ++i) {
    const auto start = clock_type::now();
    http::write(socket, request);
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
    if (response.result_int() != 200) {
      std::fprintf(stderr, "status %u: %s\n", response.result_int(), response.body().c_str());
      return 1;
    }
    if (i >= 10) latency_ms.push_back(ms);  // the first ten warm the connection and caches
  }
  std::vector<double> stage_ms = stand_in->take_stage_ms();
  stage_ms.erase(stage_ms.begin(), stage_ms.begin() + 10);
  std::vector<double> rest_ms(latency_ms.size());
  for (size_t i = 0; i < rest_ms.size(); ++i) rest_ms[i] = latency_ms[i] - stage_ms[i];

  std::printf("%s: %zu bytes, %d requests on one connection\n\n", argv[1], body.size(), iterations);
  std::printf("| | p50 ms | p90 ms |\n|---|---|---|\n");
  std::printf("| client latency | %.3f | %.3f |\n", percentile(latency_ms, 0.5), percentile(latency_ms, 0.9));
  std::printf("| decode + prepare | %.3f | %.3f |\n", percentile(stage_ms, 0.5), percentile(stage_ms, 0.9));
  std::printf("| the rest (HTTP, JSON, hand-offs) | %.3f | %.3f |\n", percentile(rest_ms, 0.5),
              percentile(rest_ms, 0.9));
  socket.close();
  server.stop_accepting();
  guard.reset();
  io.stop();
  for (auto& t : io_threads) t.join();
  return 0;
}
