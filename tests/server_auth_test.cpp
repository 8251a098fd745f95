// API keys on the real server process: with keys, /v1/* and the WebSocket upgrade need
// "Authorization: Bearer <key>" (any of the keys, from --api-key, --api-key-file or
// CUA_S1_API_KEY; the scheme in any case), else 401 {"detail"} with WWW-Authenticate: Bearer,
// decided on the headers before the body is read; /health* stay open, /metrics open unless
// --metrics-require-key; failures are counted in /metrics; no key reaches the log. Without a
// key, binding beyond loopback logs a warning.
#define BOOST_TEST_MODULE server_auth
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <boost/beast/websocket.hpp>
#include <fstream>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;

namespace {

const std::string flag_key = "alpha-Key_1.flag";
const std::string file_key = "beta~key/2+file";
const std::string wrong_key = "alpha-Key_1.flaG";

// The key file of the shared keyed server: a blank line and a CRLF line besides the key.
std::string key_file_path() {
  static const std::string path = [] {
    const std::string name = "/tmp/cua-s1-auth-test-keys-" + std::to_string(getpid());
    std::ofstream(name) << "\n" << file_key << "\r\n\n";
    return name;
  }();
  return path;
}

// One keyed server for the module: a key given as a flag, another in a file.
server_process& keyed_server() {
  static server_process instance(
      {"--threads", "1", "--api-key", flag_key, "--api-key-file", key_file_path()});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

std::string small_request() { return read_file(fixture_path("prepare/requests/std-small.json")); }

using header_list = std::vector<std::pair<std::string, std::string>>;

header_list bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

http::response<http::string_body> post_decision(server_process& server, const header_list& headers) {
  http_connection connection(server.port());
  return connection.exchange(http::verb::post, "/v1/systemone", small_request(), headers);
}

http::response<http::string_body> get(server_process& server, const std::string& target,
                                      const header_list& headers = {}) {
  http_connection connection(server.port());
  return connection.exchange(http::verb::get, target, {}, headers);
}

std::string detail_of(const http::response<http::string_body>& response) {
  return std::string(boost::json::parse(response.body()).as_object().at("detail").as_string());
}

// A 401 as the SDKs expect it: JSON detail and a Bearer challenge.
void expect_unauthorized(const http::response<http::string_body>& response) {
  BOOST_TEST(response.result_int() == 401u, response.body());
  BOOST_TEST(std::string(response[http::field::content_type]) == "application/json");
  BOOST_TEST(std::string(response[http::field::www_authenticate]).rfind("Bearer", 0) == 0u);
  BOOST_TEST(!detail_of(response).empty());
}

// The value of a counter line of /metrics (e.g. `cua_s1_auth_failures_total{reason="missing"}`),
// read with `headers`; -1 when absent.
long counter(server_process& server, const std::string& series, const header_list& headers = {}) {
  const std::string text = get(server, "/metrics", headers).body();
  const size_t at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stol(text.substr(at + series.size() + 1));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_without_a_key_or_with_another_scheme_gets_401) {
  expect_unauthorized(post_decision(keyed_server(), {}));
  expect_unauthorized(post_decision(keyed_server(), {{"Authorization", "Basic " + flag_key}}));
  expect_unauthorized(post_decision(keyed_server(), {{"Authorization", "Bearer"}}));
  expect_unauthorized(post_decision(keyed_server(), {{"Authorization", "Bearer "}}));
  expect_unauthorized(get(keyed_server(), "/v1/models"));
  // Before the route's own checks: a wrong method or an unknown /v1 route is 401 too.
  expect_unauthorized(get(keyed_server(), "/v1/systemone"));
  expect_unauthorized(get(keyed_server(), "/v1/nowhere"));
}

BOOST_AUTO_TEST_CASE(a_wrong_key_gets_401_invalid) {
  const auto response = post_decision(keyed_server(), bearer(wrong_key));
  expect_unauthorized(response);
  BOOST_TEST(detail_of(response) == "invalid API key");
  expect_unauthorized(post_decision(keyed_server(), bearer(flag_key + file_key)));
  expect_unauthorized(post_decision(keyed_server(), bearer(flag_key.substr(1))));
}

BOOST_AUTO_TEST_CASE(each_configured_key_is_accepted_from_the_flag_and_the_file) {
  for (const std::string& key : {flag_key, file_key}) {
    BOOST_TEST_CONTEXT(key) {
      const auto response = post_decision(keyed_server(), bearer(key));
      BOOST_TEST(response.result_int() == 200u, response.body());
      BOOST_TEST(get(keyed_server(), "/v1/models", bearer(key)).result_int() == 200u);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_bearer_scheme_is_case_insensitive) {
  for (const char* scheme : {"bearer", "BEARER", "BeArEr"}) {
    BOOST_TEST_CONTEXT(scheme) {
      const auto response =
          post_decision(keyed_server(), {{"Authorization", std::string(scheme) + " " + flag_key}});
      BOOST_TEST(response.result_int() == 200u, response.body());
    }
  }
}

BOOST_AUTO_TEST_CASE(health_and_metrics_stay_open_without_the_flag) {
  for (const char* target : {"/health", "/health/ready", "/health/live", "/metrics"})
    BOOST_TEST(get(keyed_server(), target).result_int() == 200u, target);
}

BOOST_AUTO_TEST_CASE(failed_authentications_are_counted) {
  const std::string missing = "cua_s1_auth_failures_total{reason=\"missing\"}";
  const std::string invalid = "cua_s1_auth_failures_total{reason=\"invalid\"}";
  const long missing_before = counter(keyed_server(), missing);
  const long invalid_before = counter(keyed_server(), invalid);
  BOOST_TEST_REQUIRE(missing_before >= 0);
  BOOST_TEST_REQUIRE(invalid_before >= 0);
  post_decision(keyed_server(), {});
  post_decision(keyed_server(), bearer(wrong_key));
  post_decision(keyed_server(), bearer(wrong_key));
  post_decision(keyed_server(), bearer(flag_key));  // not a failure
  BOOST_TEST(counter(keyed_server(), missing) == missing_before + 1);
  BOOST_TEST(counter(keyed_server(), invalid) == invalid_before + 2);
}

// The key is checked on the headers: a client waiting for "100 Continue" gets the 401 at once,
// its body never sent, and the connection closes.
BOOST_AUTO_TEST_CASE(expect_100_continue_gets_the_401_before_the_body) {
  for (const std::string& authorization : {std::string(), "Authorization: Bearer " + wrong_key + "\r\n"}) {
    BOOST_TEST_CONTEXT(authorization) {
      http_connection connection(keyed_server().port());
      const std::string head =
          "POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          "Content-Length: 100000\r\nExpect: 100-continue\r\n" + authorization + "\r\n";
      boost::asio::write(connection.socket(), boost::asio::buffer(head));
      boost::beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      http::read(connection.socket(), buffer, parser);
      const auto response = parser.release();
      expect_unauthorized(response);
      BOOST_TEST(!response.keep_alive());
    }
  }
  // With the right key the server asks for the body.
  http_connection connection(keyed_server().port());
  const std::string head =
      "POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000\r\nExpect: 100-continue\r\nAuthorization: Bearer " + flag_key +
      "\r\n\r\n";
  boost::asio::write(connection.socket(), boost::asio::buffer(head));
  boost::beast::flat_buffer buffer;
  http::response_parser<http::empty_body> interim;
  http::read_header(connection.socket(), buffer, interim);
  BOOST_TEST(interim.get().result_int() == 100u);
}

BOOST_AUTO_TEST_CASE(the_websocket_upgrade_needs_a_key) {
  auto upgrade = [](const header_list& headers) {
    boost::asio::io_context io;
    websocket::stream<boost::asio::ip::tcp::socket> ws{io};
    ws.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), keyed_server().port()});
    ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& r) {
      for (const auto& [name, value] : headers) r.set(name, value);
    }));
    websocket::response_type response;
    boost::system::error_code ec;
    ws.handshake(response, "127.0.0.1", "/v1/systemone/ws", ec);
    if (!ec) ws.close(websocket::close_code::normal, ec);
    return response;
  };
  const auto refused = upgrade({});
  BOOST_TEST(refused.result_int() == 401u);
  BOOST_TEST(std::string(refused[http::field::www_authenticate]).rfind("Bearer", 0) == 0u);
  BOOST_TEST(upgrade(bearer(wrong_key)).result_int() == 401u);
  BOOST_TEST(upgrade(bearer(file_key)).result_int() == 101u);
}

// Runs last in this module: every request above has been logged by now.
BOOST_AUTO_TEST_CASE(no_key_appears_in_the_log) {
  post_decision(keyed_server(), bearer(wrong_key));
  BOOST_TEST_REQUIRE(keyed_server().wait_for_log(
      [](const boost::json::object& line) {
        return line.contains("status") && line.at("status") == 401;
      },
      std::chrono::seconds(10)));
  keyed_server().wait_for_log([](const boost::json::object&) { return false; },
                              std::chrono::seconds(1));  // gathers what is left
  const std::string& log = keyed_server().log();
  BOOST_TEST(log.find("\"status\":401") != std::string::npos);
  for (const std::string& key : {flag_key, file_key, wrong_key})
    BOOST_TEST(log.find(key) == std::string::npos, key);
}

BOOST_AUTO_TEST_CASE(metrics_need_a_key_with_metrics_require_key) {
  server_process server({"--threads", "1", "--api-key", flag_key, "--metrics-require-key"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  expect_unauthorized(get(server, "/metrics"));
  expect_unauthorized(get(server, "/metrics", bearer(wrong_key)));
  BOOST_TEST(get(server, "/metrics", bearer(flag_key)).result_int() == 200u);
  BOOST_TEST(get(server, "/health").result_int() == 200u);
  BOOST_TEST(counter(server, "cua_s1_auth_failures_total{reason=\"missing\"}", bearer(flag_key)) ==
             1);
}

BOOST_AUTO_TEST_CASE(keys_come_from_the_environment_comma_separated) {
  setenv("CUA_S1_API_KEY", "env-one,env-two", 1);
  server_process server({"--threads", "1"});
  unsetenv("CUA_S1_API_KEY");
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  BOOST_TEST(post_decision(server, bearer("env-one")).result_int() == 200u);
  BOOST_TEST(post_decision(server, bearer("env-two")).result_int() == 200u);
  expect_unauthorized(post_decision(server, bearer("env-one,env-two")));
  expect_unauthorized(post_decision(server, {}));
}

BOOST_AUTO_TEST_CASE(an_unusable_key_exits_2_without_showing_it) {
  server_process server({"--api-key", "has a space"});
  BOOST_TEST(server.wait_exit() == 2);
  BOOST_TEST(server.log().find("has a space") == std::string::npos, server.log());
}

BOOST_AUTO_TEST_CASE(no_key_beyond_loopback_logs_a_warning) {
  server_process open({"--threads", "1"}, std::chrono::seconds(60), "0.0.0.0");
  BOOST_TEST_REQUIRE(open.wait_ready(), open.log());
  BOOST_TEST(open.log().find("\"event\":\"no_api_key\"") != std::string::npos, open.log());
  server_process keyed({"--threads", "1", "--api-key", flag_key}, std::chrono::seconds(60),
                       "0.0.0.0");
  BOOST_TEST_REQUIRE(keyed.wait_ready(), keyed.log());
  BOOST_TEST(keyed.log().find("\"event\":\"no_api_key\"") == std::string::npos);
  server_process loopback({"--threads", "1"});
  BOOST_TEST_REQUIRE(loopback.wait_ready(), loopback.log());
  BOOST_TEST(loopback.log().find("\"event\":\"no_api_key\"") == std::string::npos);
}
