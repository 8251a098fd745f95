// Slow and partial clients on the real server process (--read-timeout 1): headers that never
// end, a body shorter than its Content-Length, and a request dribbled a byte at a time all get
// 408 with a JSON detail once the read timeout passes (the timeout covers the whole request,
// not each read), the connection closes, and other clients are served meanwhile.
#define BOOST_TEST_MODULE server_slow_client
#include <boost/test/unit_test.hpp>

#include <future>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

server_process& server() {
  static server_process instance({"--threads", "1", "--read-timeout", "1"});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

// Sends `parts` with `pause` between them to the server at `port`, then reads its answer (status
// 0 when the connection closes without one). No Boost.Test calls: it also runs on other threads.
http_reply send_slowly(unsigned short port, const std::vector<std::string>& parts,
                       std::chrono::milliseconds pause) {
  namespace http = boost::beast::http;
  http_connection connection(port);
  boost::system::error_code ec;
  for (const std::string& part : parts) {
    boost::asio::write(connection.socket(), boost::asio::buffer(part), ec);
    if (ec) break;  // the server gave up on us and closed
    std::this_thread::sleep_for(pause);
  }
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(connection.socket(), buffer, response, ec);
  if (ec) return {};
  return {static_cast<int>(response.result_int()), response.body(),
          std::string(response[http::field::content_type]), {}, std::string(response["X-Request-Id"])};
}

void expect_408(const http_reply& reply) {
  BOOST_TEST(reply.status == 408, reply.status << " " << reply.body);
  BOOST_TEST(reply.body == "{\"detail\":\"request timed out\"}");
  BOOST_TEST(reply.content_type == "application/json");
  BOOST_TEST(!reply.request_id.empty());
}

}  // namespace

BOOST_AUTO_TEST_CASE(headers_that_never_end_get_408) {
  expect_408(send_slowly(server().port(),
                         {"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: appl"},
                         std::chrono::milliseconds(0)));
}

BOOST_AUTO_TEST_CASE(a_body_shorter_than_its_content_length_gets_408) {
  expect_408(send_slowly(server().port(),
                         {"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: "
                          "application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":"},
                         std::chrono::milliseconds(0)));
}

BOOST_AUTO_TEST_CASE(a_request_dribbled_a_byte_at_a_time_gets_408_at_the_timeout) {
  const std::string request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " +
                              std::string(40, 'x') + "\r\n\r\n";
  std::vector<std::string> bytes;
  for (char c : request) bytes.emplace_back(1, c);  // ~70 bytes at 50 ms: 3.5 s > 1 s
  // With a timeout per read instead of per request this would be answered 200.
  expect_408(send_slowly(server().port(), bytes, std::chrono::milliseconds(50)));
}

BOOST_AUTO_TEST_CASE(other_clients_are_served_while_slow_ones_wait) {
  // The port is read here: Boost.Test's assertions (server() has one) are not thread-safe.
  const unsigned short port = server().port();
  std::vector<std::future<http_reply>> slow;
  for (int i = 0; i < 8; ++i)
    slow.push_back(std::async(std::launch::async, [port] {
      return send_slowly(port, {"POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"},
                         std::chrono::milliseconds(0));
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  http_connection connection(port);
  const http_reply answer =
      connection.post("/v1/systemone", read_file(fixture_path("prepare/requests/std-small.json")));
  BOOST_TEST(answer.status == 200, answer.body);
  for (auto& reply : slow) expect_408(reply.get());
  BOOST_TEST(connection.get("/health/ready").status == 200);
}
