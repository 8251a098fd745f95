// Prometheus text format 0.0.4 writer for the server metrics.
#include "actors/metrics.hpp"

#include <algorithm>

#include "api/python_json.hpp"

namespace cua_s1 {
namespace {

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

std::string number(double v) { return python_float_repr(v); }

// Label values escape backslash, quote and newline.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// An unlabelled histogram family: its HELP and TYPE lines, then its series.
void write_histogram(std::string& out, const histogram& values, const std::string& name,
                     const std::string& help) {
  out += "# HELP " + name + " " + help + "\n";
  out += "# TYPE " + name + " histogram\n";
  values.write(out, name, "");
}

}  // namespace

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void histogram::observe(double value) {
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void histogram::write(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mutex_);
  const std::string prefix = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + prefix + "le=\"" + (i < bounds_.size() ? number(bounds_[i]) : "+Inf") +
           "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

server_metrics::server_metrics()
    : stages_{histogram(latency_buckets()), histogram(latency_buckets()),
              histogram(latency_buckets()), histogram(latency_buckets()),
              histogram(latency_buckets())},
      prompt_tokens_({64, 128, 256, 512, 1024, 2048, 4096}),
      image_pixels_({65536, 262144, 524288, 1048576, 2097152, 4194304}),
      pass_requests_({1, 2, 3, 4, 6, 8, 12, 16, 32}),
      pass_rows_({256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}),
      pass_patches_({1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}) {}

void server_metrics::count_request(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void server_metrics::count_auth_failure(const std::string& reason) {
  std::lock_guard lock(mutex_);
  ++auth_failures_[reason];
}

void server_metrics::observe_pass(size_t requests, size_t rows, size_t patches) {
  pass_requests_.observe(double(requests));
  pass_rows_.observe(double(rows));
  pass_patches_.observe(double(patches));
}

void server_metrics::observe_stage(stage which, double seconds) {
  stages_[static_cast<size_t>(which)].observe(seconds);
}

std::string server_metrics::exposition(int64_t queue_depth, const std::string& model,
                                       const std::string& weights, const std::string& backend,
                                       bool ready) const {
  std::string out;
  out += "# HELP cua_s1_http_requests_total HTTP requests answered, by route and status.\n";
  out += "# TYPE cua_s1_http_requests_total counter\n";
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, count] : requests_)
      out += "cua_s1_http_requests_total{route=\"" + label_value(key.first) + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  out += "# HELP cua_s1_auth_failures_total Requests refused 401, by reason (missing, invalid).\n";
  out += "# TYPE cua_s1_auth_failures_total counter\n";
  {
    std::lock_guard lock(mutex_);
    for (const char* reason : {"missing", "invalid"}) {
      const auto found = auth_failures_.find(reason);
      out += std::string("cua_s1_auth_failures_total{reason=\"") + reason + "\"} " +
             std::to_string(found == auth_failures_.end() ? 0 : found->second) + "\n";
    }
  }
  out += "# HELP cua_s1_queue_depth Requests admitted and not yet answered.\n";
  out += "# TYPE cua_s1_queue_depth gauge\n";
  out += "cua_s1_queue_depth " + std::to_string(queue_depth) + "\n";
  out += "# HELP cua_s1_inflight_requests Requests running on the model.\n";
  out += "# TYPE cua_s1_inflight_requests gauge\n";
  out += "cua_s1_inflight_requests " + std::to_string(inflight_requests.load()) + "\n";
  out += "# HELP cua_s1_inflight_questions Questions running on the model.\n";
  out += "# TYPE cua_s1_inflight_questions gauge\n";
  out += "cua_s1_inflight_questions " + std::to_string(inflight_questions.load()) + "\n";
  out += "# HELP cua_s1_tls_handshake_failures_total TLS connections whose handshake failed.\n";
  out += "# TYPE cua_s1_tls_handshake_failures_total counter\n";
  out += "cua_s1_tls_handshake_failures_total " + std::to_string(tls_handshake_failures.load()) + "\n";
  out += "# HELP cua_s1_stage_duration_seconds Latency of each request stage.\n";
  out += "# TYPE cua_s1_stage_duration_seconds histogram\n";
  for (size_t i = 0; i < stages_.size(); ++i)
    stages_[i].write(out, "cua_s1_stage_duration_seconds",
                     std::string("stage=\"") + stage_names[i] + "\"");
  write_histogram(out, prompt_tokens_, "cua_s1_prompt_tokens",
                  "Prompt length of each question, image tokens included.");
  write_histogram(out, image_pixels_, "cua_s1_image_pixels", "Decoded screenshot size in pixels.");
  write_histogram(out, pass_requests_, "cua_s1_pass_requests", "Requests in each model pass.");
  write_histogram(out, pass_rows_, "cua_s1_pass_rows",
                  "Language rows of each model pass (shared prefixes once).");
  write_histogram(out, pass_patches_, "cua_s1_pass_patches", "Vision patches of each model pass.");
  out += "# HELP cua_s1_ready Whether the server answers decisions (1) or not (0).\n";
  out += "# TYPE cua_s1_ready gauge\n";
  out += std::string("cua_s1_ready ") + (ready ? "1" : "0") + "\n";
  out += "# HELP cua_s1_build_info Build of the running server.\n";
  out += "# TYPE cua_s1_build_info gauge\n";
  out += "cua_s1_build_info{version=\"" CUA_S1_VERSION "\"} 1\n";
  out += "# HELP cua_s1_model_info The loaded model.\n";
  out += "# TYPE cua_s1_model_info gauge\n";
  out += "cua_s1_model_info{model=\"" + label_value(model) + "\",weights=\"" + label_value(weights) +
         "\",backend=\"" + label_value(backend) + "\"} 1\n";
  return out;
}

}  // namespace cua_s1
