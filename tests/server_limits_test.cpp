// Limits that keep the real server process serving under floods, on raw loopback sockets: the
// soft descriptor limit raised at start-up; accept backing off (with a bounded number of log
// lines) when descriptors run out; --max-connections (503 and close beyond it, at most 64 such
// answers in flight); --max-body-bytes-in-flight (503 before the body is read beyond it); and a
// request still being uploaded when SIGTERM comes is read and answered.
#define BOOST_TEST_MODULE server_limits
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string_view>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

// A client gives up on a server that does not answer after this long (a guard against hanging,
// not a timed assertion).
constexpr int hang_guard_ms = 60'000;

// One blocking loopback connection on a plain socket, every wait bounded by the hang guard.
class raw_client {
 public:
  explicit raw_client(unsigned short port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("connect failed");
  }
  ~raw_client() { close(); }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  // False when the server has closed the connection.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(sent));
    }
    return true;
  }

  // True once the server has sent something (or closed) within `timeout_ms`.
  bool readable(int timeout_ms) {
    if (!pending_.empty()) return true;
    pollfd waiting{fd_, POLLIN, 0};
    return ::poll(&waiting, 1, timeout_ms) == 1;
  }

  // The next response; status 0 when the connection closes first or the hang guard passes.
  http_reply read_reply() {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    boost::system::error_code ec;
    while (!parser.is_done()) {
      if (pending_.empty() && !receive()) return {};
      const size_t used = parser.put(boost::asio::buffer(pending_), ec);
      pending_.erase(0, used);
      if (ec == http::error::need_more) {
        if (!receive()) return {};
        ec = {};
      } else if (ec) {
        return {};
      }
    }
    const auto& response = parser.get();
    return {static_cast<int>(response.result_int()), response.body(),
            std::string(response[http::field::content_type]),
            std::string(response[http::field::retry_after]), std::string(response["X-Request-Id"])};
  }

  // True when the server closes the connection (end of stream or reset) with nothing more sent.
  bool closed_by_server() { return pending_.empty() && !receive(); }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  // Appends what arrives; false on end of stream, error or the hang guard.
  bool receive() {
    if (!readable(hang_guard_ms)) return false;
    char chunk[65536];
    const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got <= 0) return false;
    pending_.append(chunk, static_cast<size_t>(got));
    return true;
  }

  int fd_;
  std::string pending_;
};

std::string get_request(const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

std::string post_header(size_t content_length) {
  return "POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

// A valid decision request padded with trailing whitespace (valid JSON) to `size` bytes.
std::string decision_body(size_t size = 0) {
  std::string body = read_file(fixture_path("prepare/requests/std-small.json"));
  if (body.size() < size) body.append(size - body.size(), ' ');
  return body;
}

std::string detail_of(const http_reply& reply) {
  boost::system::error_code ec;
  auto value = boost::json::parse(reply.body, ec);
  if (ec || !value.is_object() || !value.as_object().contains("detail")) return {};
  return std::string(value.as_object().at("detail").as_string());
}

// The lines of `event` the server has logged so far.
size_t log_lines_with_event(server_process& server, const std::string& event) {
  server.wait_for_log([](const boost::json::object&) { return true; }, std::chrono::seconds(5));
  const std::string needle = "\"event\":\"" + event + "\"";
  size_t count = 0;
  for (size_t at = server.log().find(needle); at != std::string::npos;
       at = server.log().find(needle, at + needle.size()))
    ++count;
  return count;
}

size_t open_descriptors(pid_t pid) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    ++count;
  return count;
}

// Lowers the running server's descriptor limit (soft and hard) to `limit`.
void limit_descriptors(pid_t pid, rlim_t limit) {
  const rlimit lowered{limit, limit};
  BOOST_TEST_REQUIRE(::prlimit(pid, RLIMIT_NOFILE, &lowered, nullptr) == 0);
}

// GET /health on a new connection until one is answered 200 (the server frees a connection's
// slot once it has seen the close, a moment after the client closed); false after many tries.
bool health_answers_on_a_new_connection(unsigned short port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    raw_client client(port);
    if (client.send(get_request("/health")) && client.read_reply().status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool logged(server_process& server, const std::string& event) {
  return server.wait_for_log(
      [&](const boost::json::object& line) {
        return line.contains("event") && line.at("event") == event.c_str();
      },
      std::chrono::seconds(60));
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_soft_descriptor_limit_is_raised_to_the_hard_limit) {
  rlimit ours{};
  BOOST_TEST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &ours) == 0);
  BOOST_TEST_REQUIRE(ours.rlim_max > 256u);
  // The server inherits a soft limit of 256 under our hard one.
  rlimit lowered{256, ours.rlim_max};
  BOOST_TEST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  std::unique_ptr<server_process> server;
  try {
    server = std::make_unique<server_process>(std::vector<std::string>{"--threads", "1"});
  } catch (...) {
    ::setrlimit(RLIMIT_NOFILE, &ours);
    throw;
  }
  ::setrlimit(RLIMIT_NOFILE, &ours);
  rlimit theirs{};
  BOOST_TEST_REQUIRE(::prlimit(server->pid(), RLIMIT_NOFILE, nullptr, &theirs) == 0);
  BOOST_TEST(theirs.rlim_cur == ours.rlim_max);
  BOOST_TEST(server->log().find("\"event\":\"open_file_limit\"") != std::string::npos,
             server->log());
}

// Under `ulimit -n` too low for the clients, accept failed with EMFILE and was retried at once:
// a busy loop writing ~370,000 accept_failed lines a second. It backs off with a rate-limited
// line instead, and accepts again once descriptors are free.
BOOST_AUTO_TEST_CASE(descriptor_exhaustion_backs_off_with_a_bounded_log) {
  server_process server({"--threads", "1"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  limit_descriptors(server.pid(), open_descriptors(server.pid()) + 8);
  std::vector<std::unique_ptr<raw_client>> idle;
  for (int i = 0; i < 24; ++i) idle.push_back(std::make_unique<raw_client>(server.port()));
  BOOST_TEST_REQUIRE(logged(server, "accept_failed"), server.log());
  std::this_thread::sleep_for(std::chrono::seconds(1));  // descriptors stay exhausted meanwhile
  idle.clear();
  BOOST_TEST(health_answers_on_a_new_connection(server.port()), server.log());
  const size_t lines = log_lines_with_event(server, "accept_failed");
  BOOST_TEST_MESSAGE("accept_failed lines: " << lines);
  BOOST_TEST(lines <= 10u);
}

BOOST_AUTO_TEST_CASE(connections_beyond_max_connections_get_503_and_are_closed) {
  server_process server({"--threads", "1", "--max-connections", "4"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  limit_descriptors(server.pid(), open_descriptors(server.pid()) + 32);
  // Four keep-alive clients hold the four connections (a slot of a closed connection is free
  // once the server has seen the close: retry until each is served).
  std::vector<std::unique_ptr<raw_client>> held;
  for (int attempt = 0; held.size() < 4 && attempt < 200; ++attempt) {
    auto client = std::make_unique<raw_client>(server.port());
    if (client->send(get_request("/health")) && client->read_reply().status == 200)
      held.push_back(std::move(client));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST_REQUIRE(held.size() == 4u, server.log());
  // Idle clients beyond the limit (more than the descriptors left) are answered and closed.
  std::vector<std::unique_ptr<raw_client>> beyond;
  for (int i = 0; i < 48; ++i) beyond.push_back(std::make_unique<raw_client>(server.port()));
  for (auto& client : beyond) {
    const http_reply reply = client->read_reply();
    BOOST_TEST(reply.status == 503, reply.status << " " << reply.body);
    BOOST_TEST(reply.retry_after == "1");
    BOOST_TEST(reply.content_type == "application/json");
    BOOST_TEST(!detail_of(reply).empty(), reply.body);
    BOOST_TEST(client->closed_by_server());
  }
  beyond.clear();
  for (auto& client : held) {  // the admitted connections are still served
    BOOST_TEST_REQUIRE(client->send(get_request("/health")));
    BOOST_TEST(client->read_reply().status == 200);
  }
  held.pop_back();  // one leaves: a new connection is served again
  BOOST_TEST(health_answers_on_a_new_connection(server.port()), server.log());
  BOOST_TEST(log_lines_with_event(server, "accept_failed") <= 10u);
  // Refusals are logged rate-limited: fewer lines than refusals.
  const size_t refusal_lines = log_lines_with_event(server, "connection_refused");
  BOOST_TEST(refusal_lines >= 1u, server.log());
  BOOST_TEST(refusal_lines < 24u);
}

// Refusals in flight are bounded: with the one connection held and 72 idle clients beyond the
// limit (each refusal waits up to 5 s for its client to close), the first 64 are answered 503
// and the rest closed unanswered; once those clients leave, a refusal is answered again.
BOOST_AUTO_TEST_CASE(refusals_beyond_the_limit_in_flight_close_unanswered) {
  server_process server({"--threads", "1", "--max-connections", "1"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  std::unique_ptr<raw_client> held;
  for (int attempt = 0; !held && attempt < 200; ++attempt) {
    auto client = std::make_unique<raw_client>(server.port());
    if (client->send(get_request("/health")) && client->read_reply().status == 200)
      held = std::move(client);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST_REQUIRE(held != nullptr, server.log());
  std::vector<std::unique_ptr<raw_client>> beyond;
  for (int i = 0; i < 72; ++i) beyond.push_back(std::make_unique<raw_client>(server.port()));
  size_t answered = 0, unanswered = 0;
  for (auto& client : beyond) {
    const int status = client->read_reply().status;
    BOOST_TEST((status == 503 || status == 0), status);
    (status == 503 ? answered : unanswered) += 1;
  }
  BOOST_TEST(answered == 64u);
  BOOST_TEST(unanswered == 8u);
  beyond.clear();
  bool refused_again = false;  // the refusals end as their clients close
  for (int attempt = 0; !refused_again && attempt < 200; ++attempt) {
    raw_client late(server.port());
    refused_again = late.read_reply().status == 503;
    if (!refused_again) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST(refused_again, server.log());
  BOOST_TEST_REQUIRE(held->send(get_request("/health")));
  BOOST_TEST(held->read_reply().status == 200);
}

// Three uploads of 3 MiB against a budget of 8 MiB: whichever comes third is answered 503 as
// soon as its headers are in (1 KiB of its body sent), and closed; the other two are answered.
// A chunked body (no Content-Length) holds the largest body allowed, 8 MiB.
BOOST_AUTO_TEST_CASE(uploads_beyond_the_body_budget_get_503_before_their_body) {
  const size_t budget = 8 * 1024 * 1024, upload = 3 * 1024 * 1024;
  server_process server({"--threads", "1", "--read-timeout", "120", "--max-body-bytes-in-flight",
                         std::to_string(budget)});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const std::string body = decision_body(upload);
  const std::string_view first_part = std::string_view(body).substr(0, 1024);
  const std::string_view rest = std::string_view(body).substr(1024);

  std::vector<std::unique_ptr<raw_client>> uploads;
  for (int i = 0; i < 3; ++i) {
    uploads.push_back(std::make_unique<raw_client>(server.port()));
    BOOST_TEST_REQUIRE(uploads.back()->send(post_header(body.size())));
    BOOST_TEST_REQUIRE(uploads.back()->send(first_part));
  }
  // Wait until one of them is answered.
  size_t refused = uploads.size();
  for (int round = 0; refused == uploads.size() && round < hang_guard_ms / 10; ++round)
    for (size_t i = 0; i < uploads.size(); ++i)
      if (uploads[i]->readable(10)) refused = i;
  BOOST_TEST_REQUIRE(refused < uploads.size(), server.log());
  const http_reply busy = uploads[refused]->read_reply();
  BOOST_TEST(busy.status == 503, busy.status << " " << busy.body);
  BOOST_TEST(busy.retry_after == "1");
  BOOST_TEST(busy.content_type == "application/json");
  BOOST_TEST(!detail_of(busy).empty(), busy.body);
  BOOST_TEST(!busy.request_id.empty());
  BOOST_TEST(uploads[refused]->closed_by_server());
  uploads.erase(uploads.begin() + static_cast<std::ptrdiff_t>(refused));

  {  // a request without a body is not held back, nor a small one within what is left
    raw_client health(server.port());
    BOOST_TEST_REQUIRE(health.send(get_request("/health")));
    BOOST_TEST(health.read_reply().status == 200);
    raw_client small(server.port());
    const std::string small_body = decision_body();
    BOOST_TEST_REQUIRE(small.send(post_header(small_body.size()) + small_body));
    const http_reply answer = small.read_reply();
    BOOST_TEST(answer.status == 200, answer.body);
  }
  // A chunked body holds 8 MiB: refused while the two uploads hold 6 MiB.
  const std::string small_body = decision_body();
  std::ostringstream size_hex;
  size_hex << std::hex << small_body.size();
  const std::string chunked_request =
      "POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      size_hex.str() + "\r\n" + small_body + "\r\n0\r\n\r\n";
  {
    raw_client chunked(server.port());
    chunked.send(chunked_request);  // the server may close before the whole body is sent
    const http_reply reply = chunked.read_reply();
    BOOST_TEST(reply.status == 503, reply.status << " " << reply.body);
    BOOST_TEST(reply.retry_after == "1");
  }
  for (auto& client : uploads) {  // the uploads within the budget finish and are answered
    BOOST_TEST_REQUIRE(client->send(rest));
    const http_reply answer = client->read_reply();
    BOOST_TEST(answer.status == 200, answer.status << " " << answer.body);
  }
  uploads.clear();
  // Answered bodies are released: the chunked body is taken now.
  raw_client chunked(server.port());
  BOOST_TEST_REQUIRE(chunked.send(chunked_request));
  const http_reply taken = chunked.read_reply();
  BOOST_TEST(taken.status == 200, taken.status << " " << taken.body);
}

// A request whose body is still arriving when SIGTERM comes was dropped: the drain saw no
// request in flight and the process exited. It is read and answered (503 "shutting down" with
// Retry-After, since the drain admits no new work), then the process exits 0.
BOOST_AUTO_TEST_CASE(a_request_being_uploaded_at_sigterm_is_answered) {
  server_process server({"--threads", "1", "--read-timeout", "120", "--drain-timeout", "600"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const std::string body = decision_body(64 * 1024);
  raw_client upload(server.port());
  BOOST_TEST_REQUIRE(upload.send(post_header(body.size()) + body.substr(0, 1024)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let its headers be read
  server.signal(SIGTERM);
  BOOST_TEST_REQUIRE(logged(server, "shutdown"), server.log());
  // Still running while the upload is unfinished (it counts as a request in flight).
  BOOST_TEST(server.running());
  const bool sent = upload.send(std::string_view(body).substr(1024));
  BOOST_TEST(sent);
  const http_reply answer = upload.read_reply();
  BOOST_TEST((answer.status == 200 || (answer.status == 503 && answer.retry_after == "1")),
             answer.status << " " << answer.body);
  BOOST_TEST(server.wait_exit(std::chrono::seconds(120)) == 0, server.log());
  BOOST_TEST(server.log().find("\"drained\"") != std::string::npos, server.log());
}
