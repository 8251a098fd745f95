// The WebSocket route of the real server process: each text message is one request and each
// reply carries its id, its sequence number, the status and the same body as HTTP; more
// messages than the in-flight bound are all answered (backpressure, nothing dropped); a binary
// message closes with 1003, one over 8 MiB with 1009, a plain GET gets 426, and the server keeps
// serving after each; the upgrade's X-Request-Id names every message; SIGTERM answers the
// messages in flight, then closes with 1001.
#define BOOST_TEST_MODULE server_websocket
#include <boost/test/unit_test.hpp>

#include <boost/beast/websocket.hpp>
#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <thread>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;
namespace websocket = boost::beast::websocket;

namespace {

server_process& server() {
  static server_process instance({"--threads", "1"});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

std::string request(const std::string& name) {
  return read_file(fixture_path("prepare/requests/" + name + ".json"));
}

// A WebSocket client connection to /v1/systemone/ws (of the shared server unless a port is
// given), optionally sending X-Request-Id with the upgrade.
struct ws_client {
  boost::asio::io_context io;
  websocket::stream<boost::asio::ip::tcp::socket> ws{io};
  websocket::response_type upgrade_response;
  explicit ws_client(unsigned short port = 0, const std::string& request_id = {}) {
    ws.next_layer().connect(
        {boost::asio::ip::make_address("127.0.0.1"), port ? port : server().port()});
    ws.read_message_max(64 * 1024 * 1024);
    if (!request_id.empty())
      ws.set_option(websocket::stream_base::decorator(
          [request_id](websocket::request_type& r) { r.set("X-Request-Id", request_id); }));
    ws.handshake(upgrade_response, "127.0.0.1", "/v1/systemone/ws");
  }
  void send(const std::string& text) {
    ws.text(true);
    ws.write(boost::asio::buffer(text));
  }
  boost::json::object receive() {
    boost::beast::flat_buffer buffer;
    ws.read(buffer);
    return boost::json::parse(boost::beast::buffers_to_string(buffer.data())).as_object();
  }
  // Reads until the server closes; returns its close code.
  int close_code() {
    boost::beast::flat_buffer buffer;
    boost::system::error_code ec;
    while (!ec) ws.read(buffer, ec);
    return ec == websocket::error::closed ? int(ws.reason().code) : -1;
  }
};

std::string http_body(const std::string& body) {
  return http_connection(server().port()).post("/v1/systemone", body).body;
}

void expect_server_still_answers() {
  const http_reply reply = http_connection(server().port()).post("/v1/systemone", request("std-small"));
  BOOST_TEST(reply.status == 200, reply.body);
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_message_gets_the_http_answer_with_its_id_and_sequence) {
  const std::vector<std::pair<std::string, int>> messages = {
      {request("std-small"), 200}, {request("bnd-narrow"), 200},
      {R"({"model":"other","state":{},"questions":{}})", 422}, {"{\"a\":1,\"a\":2}", 400}};
  ws_client client;
  for (const auto& [body, status] : messages) client.send(body);
  std::map<int64_t, boost::json::object> replies;
  for (size_t i = 0; i < messages.size(); ++i) {
    boost::json::object reply = client.receive();
    replies[reply.at("sequence").as_int64()] = reply;
  }
  BOOST_TEST_REQUIRE(replies.size() == messages.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < messages.size(); ++i) {
    BOOST_TEST_CONTEXT("message " << i) {
      const boost::json::object& reply = replies.at(int64_t(i));
      BOOST_TEST(reply.at("status").as_int64() == messages[i].second);
      BOOST_TEST(boost::json::serialize(reply.at("body")) ==
                 boost::json::serialize(boost::json::parse(http_body(messages[i].first))));
      ids.insert(std::string(reply.at("request_id").as_string()));
    }
  }
  BOOST_TEST(ids.size() == messages.size());  // one id per message
  client.ws.close(websocket::close_code::normal);
}

BOOST_AUTO_TEST_CASE(more_messages_than_the_inflight_bound_are_all_answered) {
  const std::string body = request("std-small");
  const std::string expected = boost::json::serialize(boost::json::parse(http_body(body)));
  ws_client client;
  constexpr int count = 20;  // 5 x the per-connection bound
  for (int i = 0; i < count; ++i) client.send(body);
  std::set<int64_t> sequences;
  for (int i = 0; i < count; ++i) {
    const boost::json::object reply = client.receive();
    BOOST_TEST(reply.at("status").as_int64() == 200);
    BOOST_TEST(boost::json::serialize(reply.at("body")) == expected);
    sequences.insert(reply.at("sequence").as_int64());
  }
  BOOST_TEST(sequences.size() == size_t(count));
  BOOST_TEST(*sequences.rbegin() == count - 1);
  client.ws.close(websocket::close_code::normal);
}

BOOST_AUTO_TEST_CASE(a_binary_message_closes_with_1003) {
  ws_client client;
  client.ws.binary(true);
  client.ws.write(boost::asio::buffer(std::string("{}")));
  BOOST_TEST(client.close_code() == 1003);
  expect_server_still_answers();
}

BOOST_AUTO_TEST_CASE(a_message_over_8_mib_closes_with_1009) {
  ws_client client;
  boost::system::error_code ec;
  client.ws.text(true);
  client.ws.write(boost::asio::buffer(std::string(8 * 1024 * 1024 + 1, ' ')), ec);
  BOOST_TEST(client.close_code() == 1009);
  expect_server_still_answers();
}

BOOST_AUTO_TEST_CASE(a_client_that_leaves_with_work_in_flight_breaks_nothing) {
  {
    ws_client client;
    for (int i = 0; i < 8; ++i) client.send(request("bnd-maximum"));
  }  // dropped without a close handshake
  expect_server_still_answers();
  // Its last messages were still waiting when it left: dropped unrun (499) and counted.
  http_connection connection(server().port());
  std::string metrics;
  for (int i = 0; i < 600 && metrics.find("route=\"/v1/systemone/ws\",status=\"499\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = connection.get("/metrics").body;
  }
  BOOST_TEST(metrics.find("route=\"/v1/systemone/ws\",status=\"499\"") != std::string::npos, metrics);
}

BOOST_AUTO_TEST_CASE(a_plain_get_gets_426) {
  const http_reply reply = http_connection(server().port()).get("/v1/systemone/ws");
  BOOST_TEST(reply.status == 426);
  BOOST_TEST(reply.body == "{\"detail\":\"WebSocket upgrade required\"}");
}

BOOST_AUTO_TEST_CASE(the_upgrade_request_id_names_every_message) {
  ws_client client(0, "agent-7f3a");
  BOOST_TEST(std::string(client.upgrade_response["X-Request-Id"]) == "agent-7f3a");
  client.send(request("std-small"));
  client.send("{}");
  std::set<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    const boost::json::object reply = client.receive();
    ids.insert(std::string(reply.at("request_id").as_string()));
  }
  BOOST_TEST((ids == std::set<std::string>{"agent-7f3a/0", "agent-7f3a/1"}));
  client.ws.close(websocket::close_code::normal);
  // Without one the upgrade still carries a generated id.
  ws_client anonymous;
  BOOST_TEST(!std::string(anonymous.upgrade_response["X-Request-Id"]).empty());
  anonymous.ws.close(websocket::close_code::normal);
}

BOOST_AUTO_TEST_CASE(sigterm_answers_messages_in_flight_then_closes_with_1001) {
  // Timeouts far above the work: sanitizer builds on a slow CI machine take ~8 s a request.
  server_process own({"--threads", "1", "--drain-timeout", "600", "--request-timeout", "600"});
  BOOST_TEST_REQUIRE(own.wait_ready(), own.log());
  ws_client client(own.port(), "drain");
  client.send(request("std-small"));
  client.send(request("bnd-narrow"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both read and admitted
  own.signal(SIGTERM);
  std::set<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    const boost::json::object reply = client.receive();
    BOOST_TEST(reply.at("status").as_int64() == 200, boost::json::serialize(reply));
    ids.insert(std::string(reply.at("request_id").as_string()));
  }
  BOOST_TEST(ids.size() == 2u);
  BOOST_TEST(client.close_code() == 1001);
  BOOST_TEST(client.ws.reason().reason == "server is shutting down");
  BOOST_TEST(own.wait_exit(std::chrono::seconds(120)) == 0, own.log());
  BOOST_TEST(own.log().find("\"drained\"") != std::string::npos, own.log());
}
