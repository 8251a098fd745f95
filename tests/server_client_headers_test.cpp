// What the System One SDKs read from the real server process besides the body: GET /v1/models,
// Retry-After-Ms beside Retry-After, the request id also as x-typesafe-request-id,
// Server-Timing (queue, decode, inference) on a decision, and W3C traceparent accepted when
// valid (echoed, its trace id logged) and ignored when not, over HTTP and the WebSocket upgrade.
#define BOOST_TEST_MODULE server_client_headers
#include <boost/test/unit_test.hpp>

#include <boost/beast/websocket.hpp>
#include <map>
#include <regex>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;

namespace {

// One server for the module.
server_process& server() {
  static server_process instance({"--threads", "1"});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

std::string small_request() { return read_file(fixture_path("prepare/requests/std-small.json")); }

using header_list = std::vector<std::pair<std::string, std::string>>;

http::response<http::string_body> exchange(http::verb verb, const std::string& target,
                                           std::string body = {}, const header_list& headers = {}) {
  http_connection connection(server().port());
  return connection.exchange(verb, target, std::move(body), headers);
}

const std::string valid_traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const std::string valid_trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";

// The trace_id of the "request" log line of `request_id` ("" if it has none), or
// "(no request line)".
std::string logged_trace_id(const std::string& request_id) {
  std::string trace_id = "(no request line)";
  server().wait_for_log(
      [&](const boost::json::object& line) {
        if (!line.contains("event") || line.at("event") != "request" ||
            !line.contains("request_id") || line.at("request_id") != request_id.c_str())
          return false;
        trace_id = line.contains("trace_id") ? std::string(line.at("trace_id").as_string()) : "";
        return true;
      },
      std::chrono::seconds(10));
  return trace_id;
}

}  // namespace

BOOST_AUTO_TEST_CASE(models_lists_the_served_model) {
  const auto response = exchange(http::verb::get, "/v1/models");
  BOOST_TEST_REQUIRE(response.result_int() == 200u, response.body());
  BOOST_TEST(std::string(response[http::field::content_type]) == "application/json");
  const auto body = boost::json::parse(response.body()).as_object();
  BOOST_TEST(body.size() == 1u);
  const auto& models = body.at("models").as_array();
  BOOST_TEST_REQUIRE(models.size() == 1u);
  const auto& model = models[0].as_object();
  BOOST_TEST(model.size() == 3u);
  BOOST_TEST(model.at("name") == "cua-s1-4b-0.2");
  BOOST_TEST(std::regex_match(std::string(model.at("release_date").as_string()),
                              std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}")));
  // The description names the weights served, as /health does.
  const auto health = boost::json::parse(exchange(http::verb::get, "/health").body()).as_object();
  const std::string weights(health.at("weights").as_string());
  BOOST_TEST(!weights.empty());
  BOOST_TEST(std::string(model.at("description").as_string()).find(weights) != std::string::npos);
  // Other methods 405 as on the other GET routes.
  const auto refused = exchange(http::verb::post, "/v1/models", "{}");
  BOOST_TEST(refused.result_int() == 405u);
  BOOST_TEST(std::string(refused[http::field::allow]) == "GET");
}

BOOST_AUTO_TEST_CASE(the_request_id_is_also_sent_as_x_typesafe_request_id) {
  for (const char* target : {"/health", "/v1/models", "/nowhere"}) {
    BOOST_TEST_CONTEXT(target) {
      const auto response = exchange(http::verb::get, target);
      const std::string id(response["X-Request-Id"]);
      BOOST_TEST(!id.empty());
      BOOST_TEST(std::string(response["x-typesafe-request-id"]) == id);
    }
  }
  const auto decided = exchange(http::verb::post, "/v1/systemone", small_request(),
                                {{"X-Request-Id", "my-request-7"}});
  BOOST_TEST(decided.result_int() == 200u);
  BOOST_TEST(std::string(decided["X-Request-Id"]) == "my-request-7");
  BOOST_TEST(std::string(decided["x-typesafe-request-id"]) == "my-request-7");
}

BOOST_AUTO_TEST_CASE(a_503_carries_retry_after_and_retry_after_ms) {
  // A server of --max-connections 1 whose one connection is held open: a second connection is
  // answered 503 and closed.
  server_process full({"--threads", "1", "--max-connections", "1"});
  BOOST_TEST_REQUIRE(full.wait_ready(), full.log());
  // The probes of wait_ready may take a moment to be closed on the server's side.
  std::optional<http_connection> held;
  for (int attempt = 0; attempt < 200 && !held; ++attempt) {
    held.emplace(full.port());
    if (held->get("/health/live").status != 200) {
      held.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  BOOST_TEST_REQUIRE(held.has_value());
  http_connection refused(full.port());
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  http::read(refused.socket(), buffer, parser);
  const auto response = parser.release();
  BOOST_TEST(response.result_int() == 503u);
  BOOST_TEST(std::string(response[http::field::retry_after]) == "1");
  BOOST_TEST(std::string(response["Retry-After-Ms"]) == "1000");
}

BOOST_AUTO_TEST_CASE(a_decision_carries_server_timing) {
  const auto response = exchange(http::verb::post, "/v1/systemone", small_request());
  BOOST_TEST_REQUIRE(response.result_int() == 200u, response.body());
  const std::string timing(response["Server-Timing"]);
  const std::regex metric("(queue|decode|inference);dur=([0-9]+\\.[0-9]+)");
  std::map<std::string, double> durations;
  for (std::sregex_iterator it(timing.begin(), timing.end(), metric), end; it != end; ++it)
    durations[(*it)[1]] = std::stod((*it)[2]);
  BOOST_TEST(durations.size() == 3u, timing);
  BOOST_TEST(durations["decode"] > 0.0, timing);
  BOOST_TEST(durations["inference"] > 0.0, timing);
  BOOST_TEST(durations["queue"] >= 0.0, timing);
  // An answer the engine did not run has none.
  BOOST_TEST(exchange(http::verb::get, "/health")["Server-Timing"].empty());
  BOOST_TEST(exchange(http::verb::post, "/v1/systemone", "{")["Server-Timing"].empty());
}

BOOST_AUTO_TEST_CASE(a_valid_traceparent_is_echoed_and_logged) {
  const std::string later_version = "01-" + valid_trace_id + "-00f067aa0ba902b7-00-extra";
  for (const std::string& traceparent : {valid_traceparent, later_version}) {
    BOOST_TEST_CONTEXT(traceparent) {
      const std::string id = "traced-" + std::to_string(traceparent.size());
      const auto response = exchange(http::verb::post, "/v1/systemone", small_request(),
                                     {{"traceparent", traceparent}, {"X-Request-Id", id}});
      BOOST_TEST(response.result_int() == 200u);
      // A later version's further fields are dropped: its first four are echoed.
      BOOST_TEST(std::string(response["traceparent"]) == traceparent.substr(0, 55));
      BOOST_TEST(logged_trace_id(id) == valid_trace_id);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_invalid_traceparent_is_ignored) {
  const std::vector<std::string> invalid = {
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 with more fields
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",   // short trace id
      "garbage"};
  int n = 0;
  for (const std::string& traceparent : invalid) {
    BOOST_TEST_CONTEXT(traceparent) {
      const std::string id = "untraced-" + std::to_string(++n);
      const auto response = exchange(http::verb::get, "/health",  {},
                                     {{"traceparent", traceparent}, {"X-Request-Id", id}});
      BOOST_TEST(response.result_int() == 200u);
      BOOST_TEST(response["traceparent"].empty());
      BOOST_TEST(logged_trace_id(id) == "");
    }
  }
}

BOOST_AUTO_TEST_CASE(the_websocket_upgrade_echoes_its_ids_and_traceparent) {
  boost::asio::io_context io;
  websocket::stream<boost::asio::ip::tcp::socket> ws{io};
  ws.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), server().port()});
  ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
    r.set("traceparent", valid_traceparent);
    r.set("X-Request-Id", "ws-traced");
  }));
  websocket::response_type upgrade;
  ws.handshake(upgrade, "127.0.0.1", "/v1/systemone/ws");
  BOOST_TEST(std::string(upgrade["traceparent"]) == valid_traceparent);
  BOOST_TEST(std::string(upgrade["x-typesafe-request-id"]) == "ws-traced");
  ws.text(true);
  ws.write(boost::asio::buffer(small_request()));
  boost::beast::flat_buffer buffer;
  ws.read(buffer);
  BOOST_TEST(logged_trace_id("ws-traced/0") == valid_trace_id);
  ws.close(websocket::close_code::normal);
}
