// The WebSocket route of the real server process: each text message is one request and each
// reply carries its id, its sequence number, the status and the same body as HTTP; more
// messages than the in-flight bound are all answered (backpressure, nothing dropped); a binary
// message closes with 1003, one over 8 MiB with 1009, a plain GET gets 426, and the server keeps
// serving after each; the upgrade's X-Request-Id names every message; SIGTERM answers the
// messages in flight, then closes with 1001. A client that sends and never reads is held back
// (bounded memory and log), closed with 1008 once its replies stall, and does not hold up a
// drain; a refused handshake is answered {"detail": ...} like any error.
#define BOOST_TEST_MODULE server_websocket
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <boost/beast/websocket.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <future>
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
  // `small_buffers`: a small receive buffer and segment size, so that the kernel holds few
  // replies that are not read (loopback's 64 KiB segments let the server's send buffer grow to
  // megabytes).
  explicit ws_client(unsigned short port = 0, const std::string& request_id = {},
                     bool small_buffers = false) {
    ws.next_layer().open(boost::asio::ip::tcp::v4());
    if (small_buffers) {
      ws.next_layer().set_option(boost::asio::socket_base::receive_buffer_size(16 * 1024));
      const int segment_bytes = 1024;
      setsockopt(ws.next_layer().native_handle(), IPPROTO_TCP, TCP_MAXSEG, &segment_bytes,
                 sizeof segment_bytes);
    }
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

void expect_server_still_answers(unsigned short port = 0) {
  const http_reply reply =
      http_connection(port ? port : server().port()).post("/v1/systemone", request("std-small"));
  BOOST_TEST(reply.status == 200, reply.body);
}

// The resident memory of process `pid` in KiB (VmRSS in /proc/PID/status).
int64_t resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// How many WebSocket messages the server at `port` has answered with `status` (/metrics).
int64_t websocket_answers(unsigned short port, int status) {
  const std::string metrics = http_connection(port).get("/metrics").body;
  const std::string key = "cua_s1_http_requests_total{route=\"/v1/systemone/ws\",status=\"" +
                          std::to_string(status) + "\"} ";
  const size_t at = metrics.find(key);
  return at == std::string::npos ? 0 : std::stoll(metrics.substr(at + key.size()));
}

// Sends the text message `text` (under 126 bytes) again and again as raw client frames and
// never reads, until `limit` messages are sent, the socket has taken nothing for a second (the
// server stopped reading), or the server dropped the connection. Returns the messages sent.
size_t flood(boost::asio::ip::tcp::socket& socket, const std::string& text, size_t limit) {
  std::string frame = {char(0x81), char(0x80 | text.size()), 0, 0, 0, 0};  // FIN text, mask 0
  frame += text;
  std::string batch;
  for (int i = 0; i < 1024; ++i) batch += frame;
  socket.non_blocking(true);
  size_t sent_bytes = 0, offset = 0;
  while (sent_bytes < limit * frame.size()) {
    boost::system::error_code ec;
    const size_t wrote =
        socket.write_some(boost::asio::buffer(batch.data() + offset, batch.size() - offset), ec);
    if (ec == boost::asio::error::would_block) {
      pollfd writable{socket.native_handle(), POLLOUT, 0};
      if (poll(&writable, 1, 1000) == 0) break;  // the server stopped reading
      continue;
    }
    if (ec) break;  // dropped
    sent_bytes += wrote;
    offset = (offset + wrote) % batch.size();
  }
  socket.non_blocking(false);
  return sent_bytes / frame.size();
}

// The log lines of the server whose request id begins with `id`.
size_t log_lines_naming(const std::string& log, const std::string& id) {
  size_t count = 0;
  for (size_t at = 0; (at = log.find("\"request_id\":\"" + id, at)) != std::string::npos; ++at)
    ++count;
  return count;
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

BOOST_AUTO_TEST_CASE(a_reply_longer_than_a_frame_arrives_whole) {
  // Two questions of 26 options with 256-character keys: a reply of ~15 KB, written 4 KiB at a
  // time.
  boost::json::object body = boost::json::parse(request("std-small")).as_object();
  boost::json::object questions;
  for (const char* name : {"first", "second"}) {
    boost::json::object criteria;
    for (char letter = 'a'; letter <= 'z'; ++letter)
      criteria[std::string(256, letter)] = std::string("Option ") + letter;
    questions[name] = {{"type", "choice"}, {"instructions", "Pick one."}, {"criteria", criteria}};
  }
  body["questions"] = questions;
  const std::string text = boost::json::serialize(body);
  const std::string expected = boost::json::serialize(boost::json::parse(http_body(text)));
  BOOST_TEST_REQUIRE(expected.size() > 3 * 4096u, expected);
  ws_client client;
  client.send(text);
  const boost::json::object reply = client.receive();
  BOOST_TEST(reply.at("status").as_int64() == 200);
  BOOST_TEST(boost::json::serialize(reply.at("body")) == expected);
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

BOOST_AUTO_TEST_CASE(a_refused_handshake_is_answered_as_json_without_a_server_banner) {
  namespace http = boost::beast::http;
  struct refused {
    std::vector<std::pair<std::string, std::string>> headers;
    unsigned status;
    std::string detail;
  };
  const std::vector<refused> cases = {
      {{}, 400, "The WebSocket handshake Sec-WebSocket-Key field is missing"},
      {{{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}},
       400, "The WebSocket handshake Sec-WebSocket-Version field is missing"},
      {{{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "8"}},
       426, "The WebSocket handshake Sec-WebSocket-Version field is invalid"}};
  for (const refused& each : cases) {
    BOOST_TEST_CONTEXT("status " << each.status << ": " << each.detail) {
      http_connection connection(server().port());
      http::request<http::string_body> upgrade{http::verb::get, "/v1/systemone/ws", 11};
      upgrade.set(http::field::host, "127.0.0.1");
      upgrade.set(http::field::connection, "Upgrade");
      upgrade.set(http::field::upgrade, "websocket");
      upgrade.set("X-Request-Id", "refused-upgrade");
      for (const auto& [name, value] : each.headers) upgrade.set(name, value);
      http::write(connection.socket(), upgrade);
      boost::beast::flat_buffer buffer;
      http::response<http::string_body> response;
      http::read(connection.socket(), buffer, response);
      BOOST_TEST(response.result_int() == each.status);
      BOOST_TEST(response[http::field::content_type] == "application/json");
      BOOST_TEST(response.body() ==
                 boost::json::serialize(boost::json::object{{"detail", each.detail}}));
      BOOST_TEST(response.count(http::field::server) == 0u, response[http::field::server]);
      BOOST_TEST(response["X-Request-Id"] == "refused-upgrade");
      if (each.status == 426) BOOST_TEST(response[http::field::sec_websocket_version] == "13");
    }
  }
  expect_server_still_answers();
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

BOOST_AUTO_TEST_CASE(a_client_that_never_reads_is_held_back_then_closed_with_1008) {
  server_process own({"--threads", "1", "--read-timeout", "2"});
  BOOST_TEST_REQUIRE(own.wait_ready(), own.log());
  // The yardstick: what the same work costs with a client that reads: answering 2,000 of those
  // messages and one decision over HTTP (under AddressSanitizer, memory freed stays resident in
  // its quarantine for a while, so the work done counts, not only what is kept).
  const int64_t start_kib = resident_kib(own.pid());
  {
    ws_client reads(own.port());
    for (int i = 0; i < 2000; ++i) reads.send("{}");
    for (int i = 0; i < 2000; ++i) reads.receive();
    reads.ws.close(websocket::close_code::normal);
  }
  expect_server_still_answers(own.port());
  const int64_t baseline_kib = resident_kib(own.pid());
  const int64_t reading_client_kib = baseline_kib - start_kib;
  const int64_t answered_before = websocket_answers(own.port(), 422);
  // Each "{}" is answered 422 at once; the replies are never read.
  ws_client client(own.port(), "flood", true);
  const size_t sent = flood(client.ws.next_layer(), "{}", 500000);
  const int64_t grown_while_flooded_kib = resident_kib(own.pid()) - baseline_kib;
  // Meanwhile another client is answered (from a thread: the flooder must not miss its close).
  std::future<http_reply> other = std::async(std::launch::async, [port = own.port()] {
    return http_connection(port).post("/v1/systemone", request("std-small"));
  });
  // Its replies stall for --read-timeout: the server gives the connection up and closes it with
  // 1008, which a client that reads again in time gets after the replies it had not read.
  const bool stalled = own.wait_for_log([](const boost::json::object& line) {
    return line.at("event") == "websocket_write_stalled" && line.at("request_id") == "flood";
  }, std::chrono::seconds(120));
  BOOST_TEST(stalled, own.log().substr(0, 4000));
  if (stalled) {
    boost::beast::flat_buffer buffer;
    boost::system::error_code ec;
    while (!ec) client.ws.read(buffer, ec), buffer.clear();
    BOOST_TEST(client.ws.reason().code == websocket::close_code::policy_error, ec.message());
  }
  const http_reply answer = other.get();
  BOOST_TEST(answer.status == 200, answer.body);
  const int64_t grown_kib = resident_kib(own.pid()) - baseline_kib;
  const int64_t answered = websocket_answers(own.port(), 422) - answered_before;
  BOOST_TEST_MESSAGE("sent " << sent << ", answered " << answered << "; RSS " << start_kib
                             << " KiB, +" << reading_client_kib << " KiB for a client that reads, +"
                             << grown_while_flooded_kib << " KiB while flooded, +" << grown_kib
                             << " KiB once given up");
  // The server stopped reading once the replies piled up: most messages were never read, and
  // its memory grew no more than with a client that reads (each reply queued would hold ~200
  // bytes).
  BOOST_TEST(answered < int64_t(sent / 4));
  BOOST_TEST(grown_while_flooded_kib < reading_client_kib + 32 * 1024);
  BOOST_TEST(grown_kib < reading_client_kib + 32 * 1024);
  // Of its messages answered (all failed), 10 were logged and the others counted in a line.
  BOOST_TEST(answered > 100);
  BOOST_TEST(own.wait_for_log([](const boost::json::object& line) {
    return line.at("event") == "request_lines_suppressed" && line.at("request_id") == "flood";
  }, std::chrono::seconds(60)), own.log().substr(0, 4000));
  BOOST_TEST(log_lines_naming(own.log(), "flood/") <= 10u, own.log().substr(0, 4000));
  expect_server_still_answers(own.port());
}

BOOST_AUTO_TEST_CASE(sigterm_drains_although_a_client_never_reads) {
  server_process own({"--threads", "1", "--read-timeout", "1", "--drain-timeout", "20"});
  BOOST_TEST_REQUIRE(own.wait_ready(), own.log());
  ws_client client(own.port(), "never-reads", true);
  flood(client.ws.next_layer(), "{}", 300000);
  own.signal(SIGTERM);
  // Its stalled connection is dropped at the write timeout, so the drain completes.
  BOOST_TEST(own.wait_exit(std::chrono::seconds(120)) == 0, own.log());
  BOOST_TEST(own.log().find("\"drained\"") != std::string::npos, own.log());
}
