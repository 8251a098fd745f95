// Cancellation on the real server process: a client that sends a decision and closes its
// connection before the work starts gets its work dropped (logged, counted as 499, never run),
// the queue drains to 0, and the server answers the next request correctly.
#define BOOST_TEST_MODULE server_cancel
#include <boost/test/unit_test.hpp>

#include <future>
#include <vector>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

// Writes one POST /v1/systemone with `request_id` and closes the connection without reading.
void send_and_hang_up(unsigned short port, const std::string& body, const std::string& request_id) {
  namespace http = boost::beast::http;
  http_connection connection(port);
  http::request<http::string_body> request{http::verb::post, "/v1/systemone", 11};
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.set("X-Request-Id", request_id);
  request.body() = body;
  request.prepare_payload();
  http::write(connection.socket(), request);
  connection.socket().close();
}

bool logged_for(server_process& server, const std::string& request_id, const std::string& event,
                std::chrono::seconds timeout) {
  return server.wait_for_log(
      [&](const boost::json::object& line) {
        return line.contains("event") && line.at("event") == event.c_str() &&
               line.contains("request_id") && line.at("request_id") == request_id.c_str();
      },
      timeout);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_client_that_hangs_up_before_its_work_starts_cancels_it) {
  // One decode thread: the large requests keep it busy while the hung-up one waits its turn.
  server_process server({"--threads", "1", "--decode-threads", "1", "--request-timeout", "600"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const unsigned short port = server.port();
  const std::string slow = read_file(fixture_path("prepare/requests/bnd-maximum.json"));
  std::vector<std::future<http_reply>> busy;
  for (int i = 0; i < 2; ++i)
    busy.push_back(std::async(std::launch::async, [port, slow] {
      http_connection connection(port);
      return connection.post("/v1/systemone", slow);
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let them be admitted first
  const std::string small = read_file(fixture_path("prepare/requests/std-small.json"));
  for (const char* id : {"hung-up-1", "hung-up-2", "hung-up-3"}) send_and_hang_up(port, small, id);

  for (auto& reply : busy) {
    const http_reply answer = reply.get();
    BOOST_TEST(answer.status == 200, answer.status << " " << answer.body);
  }
  for (const char* id : {"hung-up-1", "hung-up-2", "hung-up-3"}) {
    BOOST_TEST_CONTEXT(id) {
      // Dropped before decoding ("request_cancelled") or before the model ran it ("not run"),
      // answered 499 to nobody: its "request" line says so.
      BOOST_TEST(logged_for(server, id, "request", std::chrono::seconds(600)), server.log());
      const std::string& log = server.log();
      const size_t at = log.find(std::string("\"request_id\":\"") + id + "\",\"route\"");
      BOOST_TEST_REQUIRE(at != std::string::npos, log);
      const std::string line = log.substr(at, log.find('\n', at) - at);
      BOOST_TEST(line.find("\"status\":499") != std::string::npos, line);
    }
  }
  const bool dropped_unrun =
      server.log().find("\"event\":\"request_cancelled\"") != std::string::npos ||
      server.log().find("client closed the connection") != std::string::npos;
  BOOST_TEST(dropped_unrun, server.log());

  http_connection connection(port);
  const http_reply metrics = connection.get("/metrics");
  BOOST_TEST(metrics.body.find("cua_s1_http_requests_total{route=\"/v1/systemone\",status=\"499\"} 3\n") !=
                 std::string::npos,
             metrics.body);
  BOOST_TEST(metrics.body.find("cua_s1_queue_depth 0\n") != std::string::npos, metrics.body);
  BOOST_TEST(metrics.body.find("cua_s1_inflight_requests 0\n") != std::string::npos);
  const http_reply next = connection.post("/v1/systemone", small);
  BOOST_TEST(next.status == 200, next.body);
  BOOST_TEST(next.body.find("\"answers\"") != std::string::npos, next.body);
}
