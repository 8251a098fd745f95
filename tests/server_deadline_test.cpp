// The per-request deadline on the real server process: with --request-timeout 1 and a burst
// that queues longer than that, late work is dropped with 503 + Retry-After (never run, never
// another status), the queue drains to 0, and the server answers the next request correctly.
#define BOOST_TEST_MODULE server_deadline
#include <boost/test/unit_test.hpp>

#include <future>
#include <vector>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

BOOST_AUTO_TEST_CASE(work_not_started_by_the_deadline_gets_503_and_nothing_leaks) {
  server_process server({"--threads", "1", "--decode-threads", "1", "--request-timeout", "1"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const std::string body = read_file(fixture_path("prepare/requests/bnd-maximum.json"));
  const unsigned short port = server.port();
  std::vector<std::future<http_reply>> replies;
  for (int i = 0; i < 24; ++i)
    replies.push_back(std::async(std::launch::async, [port, body] {
      http_connection connection(port);
      return connection.post("/v1/systemone", body);
    }));
  int answered = 0, timed_out = 0;
  for (auto& reply : replies) {
    const http_reply r = reply.get();
    if (r.status == 200) {
      ++answered;
    } else {
      BOOST_TEST(r.status == 503, r.status << " " << r.body);
      BOOST_TEST(r.body.find("timed out") != std::string::npos, r.body);
      BOOST_TEST(r.retry_after == "1");
      ++timed_out;
    }
  }
  BOOST_TEST_MESSAGE(answered << " answered, " << timed_out << " timed out in the queue");
  BOOST_TEST(answered >= 1);
  BOOST_TEST(timed_out >= 1);  // 24 large images on one decode thread take well over 1 s

  http_connection connection(port);
  const http_reply metrics = connection.get("/metrics");
  BOOST_TEST(metrics.body.find("cua_s1_queue_depth 0\n") != std::string::npos, metrics.body);
  BOOST_TEST(metrics.body.find("cua_s1_inflight_requests 0\n") != std::string::npos);
  const http_reply next = connection.post("/v1/systemone", body);
  BOOST_TEST(next.status == 200, next.body);
  BOOST_TEST(server.wait_for_log(
      [](const boost::json::object& line) {
        return line.contains("event") &&
               (line.at("event") == "request_timeout" || line.at("event") == "request_not_run");
      },
      std::chrono::seconds(5)));
}
