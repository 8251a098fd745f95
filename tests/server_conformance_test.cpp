// HTTP/1.1 conformance of the real server process, written as raw bytes where Beast's client
// would normalise the request: message framing (Transfer-Encoding, Content-Length; no request
// smuggled in a body), HEAD without a body, Expect: 100-continue, Host, absolute-form targets,
// queries, a client that half-closes after its request, and browser Origins.
#define BOOST_TEST_MODULE server_conformance
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

namespace http = boost::beast::http;

const char* const listed_origin = "https://app.example";

// One server for the module; --read-timeout 3 bounds the wait of a request the server
// misreads (a connection it keeps open where it should close).
server_process& server() {
  static server_process instance(
      {"--threads", "1", "--read-timeout", "3", "--allowed-origins",
       std::string(listed_origin) + ", http://localhost:3000"});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

std::string small_request() { return read_file(fixture_path("prepare/requests/std-small.json")); }

std::string own_authority() { return "127.0.0.1:" + std::to_string(server().port()); }

// A connection that writes bytes as given and reads responses one at a time.
class raw_connection {
 public:
  raw_connection() : connection_(server().port()) {}

  void write(const std::string& bytes) {
    boost::asio::write(connection_.socket(), boost::asio::buffer(bytes));
  }

  // The next response; `to_head`: the answer to a HEAD request (no body follows its header).
  // Status 0 when the connection ends first.
  http::response<http::string_body> read_response(bool to_head = false) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    parser.skip(to_head);
    boost::system::error_code ec;
    http::read(connection_.socket(), buffer_, parser, ec);
    if (ec) return http::response<http::string_body>{};
    return parser.release();
  }

  // The final response, after any interim (1xx) ones.
  http::response<http::string_body> read_final_response() {
    while (true) {
      auto response = read_response();
      if (response.result_int() == 0 || response.result_int() >= 200) return response;
    }
  }

  // Every byte the server still sends until it closes the connection.
  std::string read_to_end() {
    std::string rest(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    boost::system::error_code ec;
    char chunk[4096];
    while (!ec) {
      const size_t got = connection_.socket().read_some(boost::asio::buffer(chunk), ec);
      rest.append(chunk, got);
    }
    return rest;
  }

  // Ends our sending side only: we still read.
  void half_close() { connection_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send); }

 private:
  http_connection connection_;
  boost::beast::flat_buffer buffer_;
};

std::string detail_of(const http::response<http::string_body>& response) {
  auto value = boost::json::parse(response.body());
  return std::string(value.as_object().at("detail").as_string());
}

std::string post_head(const std::string& target, const std::string& extra_headers) {
  return "POST " + target + " HTTP/1.1\r\nHost: " + own_authority() +
         "\r\nContent-Type: application/json\r\n" + extra_headers + "\r\n";
}

std::string content_length(size_t bytes) {
  return "Content-Length: " + std::to_string(bytes) + "\r\n";
}

// A request that a server reading the framing wrongly would serve as a second request.
const std::string smuggled =
    "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

// 400, Connection: close, then the end of the connection: nothing after it is answered.
void expect_400_and_close(raw_connection& connection) {
  auto response = connection.read_response();
  BOOST_TEST(response.result_int() == 400u);
  BOOST_TEST(!response.keep_alive());
  BOOST_TEST(detail_of(response) == "malformed HTTP request");
  BOOST_TEST(connection.read_to_end() == "");
}

}  // namespace

BOOST_AUTO_TEST_CASE(transfer_encodings_other_than_a_single_chunked_are_refused_and_close) {
  const std::vector<std::string> encodings = {"gzip",          "identity",      "xchunked",
                                              "chunked, chunked", "gzip, chunked", "chunked;q=1"};
  for (const std::string& encoding : encodings) {
    BOOST_TEST_CONTEXT(encoding) {
      raw_connection connection;
      connection.write(post_head("/v1/systemone", "Transfer-Encoding: " + encoding + "\r\n") +
                       smuggled);
      expect_400_and_close(connection);
    }
  }
  // Two Transfer-Encoding fields, even when the last one says chunked.
  raw_connection twice;
  twice.write(post_head("/v1/systemone",
                        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n") +
              "0\r\n\r\n" + smuggled);
  expect_400_and_close(twice);
}

BOOST_AUTO_TEST_CASE(content_length_with_transfer_encoding_or_twice_is_refused_and_close) {
  const std::string body = smuggled;
  const std::vector<std::string> field_sets = {
      "Transfer-Encoding: gzip\r\n" + content_length(body.size()),
      content_length(body.size()) + "Transfer-Encoding: gzip\r\n",
      content_length(body.size()) + "Transfer-Encoding: chunked\r\n",
      "Transfer-Encoding: chunked\r\n" + content_length(body.size()),
      content_length(0) + content_length(0),
      "Content-Length: 0, 0\r\n",
      content_length(0) + content_length(body.size())};
  for (const std::string& fields : field_sets) {
    BOOST_TEST_CONTEXT(fields) {
      raw_connection connection;
      connection.write(post_head("/v1/systemone", fields) + body + smuggled);
      expect_400_and_close(connection);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_chunked_body_is_read) {
  const std::string body = small_request();
  std::ostringstream chunked;
  chunked << std::hex << 100 << "\r\n" << body.substr(0, 100) << "\r\n"
          << (body.size() - 100) << "\r\n" << body.substr(100) << "\r\n0\r\n\r\n";
  raw_connection connection;
  connection.write(post_head("/v1/systemone", "Transfer-Encoding: Chunked\r\n") + chunked.str());
  auto response = connection.read_response();
  BOOST_TEST(response.result_int() == 200u, response.body());
  BOOST_TEST(response.keep_alive());
}

BOOST_AUTO_TEST_CASE(head_answers_carry_the_get_headers_without_a_body) {
  raw_connection connection;
  const std::string host = "Host: " + own_authority() + "\r\n";
  connection.write("GET /health HTTP/1.1\r\n" + host + "\r\n");
  const auto get = connection.read_response();
  BOOST_TEST_REQUIRE(get.result_int() == 200u);
  // A HEAD, then a GET on the same connection: the bytes after the HEAD answer's header are the
  // next response, not a body.
  connection.write("HEAD /health HTTP/1.1\r\n" + host + "\r\nGET /health/live HTTP/1.1\r\n" + host +
                   "Connection: close\r\n\r\n");
  const std::string rest = connection.read_to_end();
  const size_t header_end = rest.find("\r\n\r\n");
  BOOST_TEST_REQUIRE(header_end != std::string::npos, rest);
  const std::string head = rest.substr(0, header_end + 4);
  BOOST_TEST(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0u, head);
  BOOST_TEST(head.find("Content-Length: " + std::to_string(get.body().size()) + "\r\n") !=
                 std::string::npos,
             head);
  BOOST_TEST(rest.substr(header_end + 4).rfind("HTTP/1.1 200 OK\r\n", 0) == 0u, rest);
  BOOST_TEST(rest.find("{\"status\":\"alive\"}") != std::string::npos, rest);
  BOOST_TEST(rest.find("\"ready\"") == std::string::npos, rest);

  // Refusals too: HEAD of a POST-only route is a 405 header.
  raw_connection refused;
  refused.write("HEAD /v1/systemone HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n");
  const std::string answer = refused.read_to_end();
  BOOST_TEST(answer.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0) == 0u, answer);
  BOOST_TEST(answer.substr(answer.find("\r\n\r\n") + 4) == "", answer);
}

BOOST_AUTO_TEST_CASE(expect_100_continue_is_answered_before_the_body) {
  const std::string body = small_request();
  raw_connection connection;
  connection.write(post_head("/v1/systemone", content_length(body.size()) +
                                                  "Expect: 100-continue\r\n"));
  const auto interim = connection.read_response();
  BOOST_TEST_REQUIRE(interim.result_int() == 100u, interim.result_int() << " " << interim.body());
  connection.write(body);
  const auto response = connection.read_response();
  BOOST_TEST(response.result_int() == 200u, response.body());
  BOOST_TEST(response.keep_alive());
  // The connection serves the next request.
  connection.write("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(connection.read_response().result_int() == 200u);
}

BOOST_AUTO_TEST_CASE(expect_100_continue_gets_a_refusal_at_once_and_a_close) {
  struct refused {
    std::string head;
    unsigned status;
  };
  const std::vector<refused> cases = {
      {post_head("/nowhere", content_length(1000) + "Expect: 100-continue\r\n"), 404},
      {"PUT /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           content_length(1000) + "Expect: 100-continue\r\n\r\n",
       405},
      {"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n" +
           content_length(1000) + "Expect: 100-Continue\r\n\r\n",
       415},
      {post_head("/v1/systemone", content_length(9 * 1024 * 1024) + "Expect: 100-continue\r\n"),
       413},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.head) {
      raw_connection connection;
      connection.write(c.head);  // and never the body
      const auto response = connection.read_response();
      BOOST_TEST(response.result_int() == c.status);
      BOOST_TEST(!response.keep_alive());
      BOOST_TEST(!detail_of(response).empty());
      BOOST_TEST(connection.read_to_end() == "");
    }
  }
}

BOOST_AUTO_TEST_CASE(http_1_1_without_one_host_is_400) {
  for (const std::string& fields : std::vector<std::string>{"", "Host: a\r\nHost: b\r\n"}) {
    BOOST_TEST_CONTEXT(fields) {
      raw_connection connection;
      connection.write("GET /health HTTP/1.1\r\n" + fields + "\r\n");
      const auto response = connection.read_response();
      BOOST_TEST(response.result_int() == 400u);
      BOOST_TEST(!detail_of(response).empty());
    }
  }
  // HTTP/1.0 needs none.
  raw_connection old;
  old.write("GET /health HTTP/1.0\r\n\r\n");
  BOOST_TEST(old.read_response().result_int() == 200u);
}

BOOST_AUTO_TEST_CASE(absolute_form_targets_route_by_their_path) {
  const std::string body = small_request();
  raw_connection connection;
  connection.write("POST http://" + own_authority() + "/v1/systemone HTTP/1.1\r\nHost: " +
                   own_authority() + "\r\nContent-Type: application/json\r\n" +
                   content_length(body.size()) + "\r\n" + body);
  const auto decided = connection.read_response();
  BOOST_TEST(decided.result_int() == 200u, decided.body());
  BOOST_TEST(decided.body().find("\"answers\"") != std::string::npos, decided.body());
  connection.write("GET HTTP://Example.Test:8000/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(connection.read_response().result_int() == 200u);
  connection.write("GET http://example.test/nowhere HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(connection.read_response().result_int() == 404u);
}

BOOST_AUTO_TEST_CASE(a_query_does_not_change_the_route) {
  http_connection connection(server().port());
  BOOST_TEST(connection.get("/health?x=1").status == 200);
  BOOST_TEST(connection.get("/health/live?").status == 200);
  BOOST_TEST(connection.get("/metrics?name[]=a").status == 200);
  const auto decided = connection.post("/v1/systemone?debug=1", small_request());
  BOOST_TEST(decided.status == 200, decided.body);
  BOOST_TEST(connection.get("/nowhere?x=/health").status == 404);
  // Counted under the route, not the target.
  const auto metrics = connection.get("/metrics").body;
  BOOST_TEST(metrics.find("?") == std::string::npos, metrics);
}

BOOST_AUTO_TEST_CASE(a_client_that_half_closes_after_its_post_gets_its_answer) {
  const std::string body = small_request();
  raw_connection connection;
  connection.write(post_head("/v1/systemone", content_length(body.size())) + body);
  connection.half_close();
  const auto response = connection.read_final_response();
  BOOST_TEST(response.result_int() == 200u, response.result_int() << " " << response.body());
  BOOST_TEST(response.body().find("\"answers\"") != std::string::npos, response.body());
  BOOST_TEST(connection.read_to_end() == "");

  // HTTP/1.0, which gets no interim answers: the final one comes first.
  raw_connection old;
  old.write("POST /v1/systemone HTTP/1.0\r\nContent-Type: application/json\r\n" +
            content_length(body.size()) + "\r\n" + body);
  old.half_close();
  const auto old_response = old.read_response();
  BOOST_TEST(old_response.result_int() == 200u,
             old_response.result_int() << " " << old_response.body());
  BOOST_TEST(old.read_to_end() == "");
}

BOOST_AUTO_TEST_CASE(origins_neither_own_nor_listed_are_refused) {
  const std::string body = small_request();
  auto post_from = [&](const std::string& origin, const std::string& content_type) {
    raw_connection connection;
    connection.write("POST /v1/systemone HTTP/1.1\r\nHost: " + own_authority() +
                     "\r\nContent-Type: " + content_type + "\r\nOrigin: " + origin + "\r\n" +
                     content_length(body.size()) + "\r\n" + body);
    return connection.read_response();
  };
  const std::vector<std::string> refused_origins = {
      "https://evil.example",     "null", "http://127.0.0.1", "http://127.0.0.1:1",
      "https://app.example.evil", "http://" + own_authority() + ".evil"};
  for (const std::string& origin : refused_origins) {
    BOOST_TEST_CONTEXT(origin) {
      const auto refused = post_from(origin, "text/plain");
      BOOST_TEST(refused.result_int() == 403u);
      BOOST_TEST(detail_of(refused) == "origin not allowed");
      BOOST_TEST(post_from(origin, "application/json").result_int() == 403u);
    }
  }
  const std::vector<std::string> allowed_origins = {"http://" + own_authority(), listed_origin,
                                                    "HTTP://LOCALHOST:3000"};
  for (const std::string& origin : allowed_origins) {
    BOOST_TEST_CONTEXT(origin) {
      const auto allowed = post_from(origin, "application/json");
      BOOST_TEST(allowed.result_int() == 200u, allowed.body());
    }
  }
  // Any route: a page may not read /health or /metrics either.
  http_connection connection(server().port());
  BOOST_TEST(connection.send(http::verb::get, "/health", {}, {{"Origin", "https://evil.example"}})
                 .status == 403);
  BOOST_TEST(connection.get("/health").status == 200);  // no Origin: unaffected
}

BOOST_AUTO_TEST_CASE(websocket_upgrades_from_other_origins_are_refused) {
  auto upgrade_from = [](const std::string& origin) {
    raw_connection connection;
    connection.write("GET /v1/systemone/ws HTTP/1.1\r\nHost: " + own_authority() +
                     "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                     "Origin: " + origin + "\r\n\r\n");
    return connection.read_response();
  };
  const auto refused = upgrade_from("https://evil.example");
  BOOST_TEST(refused.result_int() == 403u);
  BOOST_TEST(detail_of(refused) == "origin not allowed");
  BOOST_TEST(upgrade_from(listed_origin).result_int() == 101u);
  BOOST_TEST(upgrade_from("http://" + own_authority()).result_int() == 101u);
}
