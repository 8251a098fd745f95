// Prometheus exposition of the server metrics: names, labels, cumulative buckets.
#define BOOST_TEST_MODULE metrics
#include <boost/test/unit_test.hpp>

#include "actors/metrics.hpp"

using namespace cua_s1;

BOOST_AUTO_TEST_CASE(exposition_has_counters_gauges_and_cumulative_histograms) {
  server_metrics metrics;
  metrics.count_request("/v1/systemone", 200);
  metrics.count_request("/v1/systemone", 200);
  metrics.count_request("/v1/systemone", 422);
  metrics.observe_stage(stage::total, 0.003);
  metrics.observe_stage(stage::total, 0.2);
  metrics.observe_prompt_tokens(300);
  metrics.observe_pass(3, 5000, 2000);
  metrics.observe_pass(1, 300, 3600);
  metrics.inflight_requests = 2;
  std::string text = metrics.exposition(3, "m\"x", "bundled tiny model", "cpu", true);
  auto has = [&](const std::string& line) {
    BOOST_TEST(text.find(line + "\n") != std::string::npos, line);
  };
  has("# TYPE cua_s1_http_requests_total counter");
  has("cua_s1_http_requests_total{route=\"/v1/systemone\",status=\"200\"} 2");
  has("cua_s1_http_requests_total{route=\"/v1/systemone\",status=\"422\"} 1");
  has("cua_s1_queue_depth 3");
  has("cua_s1_inflight_requests 2");
  has("cua_s1_stage_duration_seconds_bucket{stage=\"total\",le=\"0.001\"} 0");
  has("cua_s1_stage_duration_seconds_bucket{stage=\"total\",le=\"0.005\"} 1");
  has("cua_s1_stage_duration_seconds_bucket{stage=\"total\",le=\"0.25\"} 2");
  has("cua_s1_stage_duration_seconds_bucket{stage=\"total\",le=\"+Inf\"} 2");
  has("cua_s1_stage_duration_seconds_count{stage=\"total\"} 2");
  has("cua_s1_stage_duration_seconds_count{stage=\"vision\"} 0");
  has("cua_s1_prompt_tokens_bucket{le=\"512.0\"} 1");
  has("# TYPE cua_s1_pass_requests histogram");
  has("cua_s1_pass_requests_bucket{le=\"1.0\"} 1");
  has("cua_s1_pass_requests_bucket{le=\"4.0\"} 2");
  has("cua_s1_pass_requests_sum 4.0");
  has("cua_s1_pass_rows_bucket{le=\"512.0\"} 1");
  has("cua_s1_pass_rows_bucket{le=\"8192.0\"} 2");
  has("cua_s1_pass_patches_bucket{le=\"2048.0\"} 1");
  has("cua_s1_pass_patches_count 2");
  has("cua_s1_ready 1");
  has("cua_s1_model_info{model=\"m\\\"x\",weights=\"bundled tiny model\",backend=\"cpu\"} 1");
}

BOOST_AUTO_TEST_CASE(failed_authentications_are_counted_by_reason) {
  server_metrics metrics;
  std::string before = metrics.exposition(0, "m", "w", "cpu", true);
  BOOST_TEST(before.find("cua_s1_auth_failures_total{reason=\"missing\"} 0\n") != std::string::npos);
  BOOST_TEST(before.find("cua_s1_auth_failures_total{reason=\"invalid\"} 0\n") != std::string::npos);
  metrics.count_auth_failure("missing");
  metrics.count_auth_failure("invalid");
  metrics.count_auth_failure("invalid");
  std::string after = metrics.exposition(0, "m", "w", "cpu", true);
  BOOST_TEST(after.find("# TYPE cua_s1_auth_failures_total counter\n") != std::string::npos);
  BOOST_TEST(after.find("cua_s1_auth_failures_total{reason=\"missing\"} 1\n") != std::string::npos);
  BOOST_TEST(after.find("cua_s1_auth_failures_total{reason=\"invalid\"} 2\n") != std::string::npos);
}
