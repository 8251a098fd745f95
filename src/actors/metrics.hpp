// Server metrics and their Prometheus text exposition (counters, gauges, histograms).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cua_s1 {

// A fixed-bucket histogram (cumulative counts are computed at exposition).
class histogram {
 public:
  explicit histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends NAME_bucket{LABELS,le=..}, NAME_sum and NAME_count lines.
  void write(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket, plus +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The stages whose latency is recorded, in exposition order.
enum class stage { decode, prepare, vision, language, total };
inline constexpr std::array<const char*, 5> stage_names{"decode", "prepare", "vision", "language",
                                                        "total"};

class server_metrics {
 public:
  server_metrics();

  void count_request(const std::string& route, int status);
  // A request refused 401: `reason` "missing" (no Bearer key) or "invalid" (a wrong key).
  void count_auth_failure(const std::string& reason);
  void observe_stage(stage which, double seconds);
  void observe_prompt_tokens(double tokens) { prompt_tokens_.observe(tokens); }
  void observe_image_pixels(double pixels) { image_pixels_.observe(pixels); }
  // One model pass as it starts: its requests, language rows and vision patches.
  void observe_pass(size_t requests, size_t rows, size_t patches);

  std::atomic<int64_t> inflight_requests{0};
  std::atomic<int64_t> inflight_questions{0};
  std::atomic<uint64_t> tls_handshake_failures{0};  // connections closed before serving HTTP

  // The whole exposition; `queue_depth` and the info labels come from the caller.
  std::string exposition(int64_t queue_depth, const std::string& model, const std::string& weights,
                         const std::string& backend, bool ready) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> auth_failures_;  // by reason
  std::array<histogram, 5> stages_;
  histogram prompt_tokens_;
  histogram image_pixels_;
  histogram pass_requests_;
  histogram pass_rows_;
  histogram pass_patches_;
};

}  // namespace cua_s1
