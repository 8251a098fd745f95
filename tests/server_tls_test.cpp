// TLS of the real server process (--tls-cert, --tls-key) with a self-signed certificate this
// test generates: an HTTPS decision is answered like plain HTTP, keep-alive and ALPN http/1.1,
// a wss:// WebSocket decision, TLS 1.2 accepted and TLS 1.1 refused, a plain-HTTP client and a
// client stalling in its handshake closed (and counted) without harming others, SIGTERM drains
// over TLS, and the start-up errors (a missing key, an unreadable file, a mismatched pair).
#define BOOST_TEST_MODULE server_tls
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;
namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

// ---- the certificate ----

struct key_deleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct x509_deleter {
  void operator()(X509* certificate) const { X509_free(certificate); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, key_deleter>;
using x509_ptr = std::unique_ptr<X509, x509_deleter>;

// A certificate for localhost and 127.0.0.1, signed by its own key.
x509_ptr self_signed_certificate(EVP_PKEY* key) {
  x509_ptr certificate(X509_new());
  X509* x = certificate.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* names =
      X509V3_EXT_conf_nid(nullptr, &context, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  X509_add_ext(x, names, -1);
  X509_EXTENSION_free(names);
  if (X509_sign(x, key, EVP_sha256()) == 0) throw std::runtime_error("X509_sign failed");
  return certificate;
}

// The generated files: a certificate with its key, and another key.
struct tls_files {
  std::filesystem::path directory;
  std::string certificate, key, other_key, certificate_pem;

  tls_files() {
    char pattern[] = "/tmp/cua-s1-tls-test-XXXXXX";
    if (!mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    directory = pattern;
    certificate = (directory / "cert.pem").string();
    key = (directory / "key.pem").string();
    other_key = (directory / "other-key.pem").string();
    key_ptr server_key(EVP_EC_gen("P-256")), unrelated_key(EVP_EC_gen("P-256"));
    write_key(server_key.get(), key);
    write_key(unrelated_key.get(), other_key);
    x509_ptr x = self_signed_certificate(server_key.get());
    FILE* out = std::fopen(certificate.c_str(), "wb");
    PEM_write_X509(out, x.get());
    std::fclose(out);
    certificate_pem = read_file(certificate);
  }
  ~tls_files() { std::filesystem::remove_all(directory); }

  static void write_key(EVP_PKEY* key, const std::string& path) {
    FILE* out = std::fopen(path.c_str(), "wb");
    PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(out);
  }
};

const tls_files& files() {
  static tls_files instance;
  return instance;
}

std::vector<std::string> tls_arguments(std::vector<std::string> extra = {}) {
  std::vector<std::string> arguments = {"--tls-cert", files().certificate, "--tls-key",
                                        files().key};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  return arguments;
}

// ---- clients ----

// A client context that trusts the generated certificate, within `versions` (min, max).
std::unique_ptr<ssl::context> client_context(int min_version = TLS1_2_VERSION,
                                             int max_version = 0) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  context->add_certificate_authority(asio::buffer(files().certificate_pem));
  context->set_verify_mode(ssl::verify_peer);
  SSL_CTX_set_min_proto_version(context->native_handle(), min_version);
  SSL_CTX_set_max_proto_version(context->native_handle(), max_version);
  return context;
}

template <class Stream>
http_reply exchange(Stream& stream, beast::flat_buffer& buffer, http::verb verb,
                    const std::string& target, std::string body = {}) {
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, "localhost");
  if (verb == http::verb::post) request.set(http::field::content_type, "application/json");
  request.body() = std::move(body);
  request.prepare_payload();
  http::write(stream, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser);
  auto response = parser.release();
  return {static_cast<int>(response.result_int()), response.body(),
          std::string(response[http::field::content_type]),
          std::string(response[http::field::retry_after]), std::string(response["X-Request-Id"])};
}

// One keep-alive HTTPS connection to 127.0.0.1:port, offering ALPN http/1.1 and h2.
class tls_connection {
 public:
  explicit tls_connection(unsigned short port,
                          std::unique_ptr<ssl::context> context = client_context())
      : context_(std::move(context)), stream_(io_, *context_) {
    SSL_set_tlsext_host_name(stream_.native_handle(), "localhost");
    static const unsigned char protocols[] = "\x02h2\x08http/1.1";
    SSL_set_alpn_protos(stream_.native_handle(), protocols, sizeof protocols - 1);
    stream_.set_verify_callback(ssl::host_name_verification("localhost"));
    stream_.next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
    stream_.handshake(ssl::stream_base::client);
  }

  http_reply send(http::verb verb, const std::string& target, std::string body = {}) {
    return exchange(stream_, buffer_, verb, target, std::move(body));
  }
  http_reply post(const std::string& target, std::string body) {
    return send(http::verb::post, target, std::move(body));
  }
  http_reply get(const std::string& target) { return send(http::verb::get, target); }

  // Writes `bytes` (requests, pipelined) in one TLS write, then reads one answer for each of
  // `answers`.
  std::vector<int> pipeline(const std::string& bytes, int answers) {
    asio::write(stream_, asio::buffer(bytes));
    std::vector<int> statuses;
    for (int i = 0; i < answers; ++i) {
      http::response<http::string_body> response;
      http::read(stream_, buffer_, response);
      statuses.push_back(static_cast<int>(response.result_int()));
    }
    return statuses;
  }

  // Writes a decision request and closes the TCP connection (no close_notify, as most clients
  // do) without reading.
  void post_and_hang_up(const std::string& body, const std::string& request_id) {
    http::request<http::string_body> request{http::verb::post, "/v1/systemone", 11};
    request.set(http::field::host, "localhost");
    request.set(http::field::content_type, "application/json");
    request.set("X-Request-Id", request_id);
    request.body() = body;
    request.prepare_payload();
    http::write(stream_, request);
    stream_.next_layer().close();
  }

  std::string alpn() {
    const unsigned char* selected = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(stream_.native_handle(), &selected, &length);
    return std::string(reinterpret_cast<const char*>(selected), length);
  }
  int version() { return SSL_version(stream_.native_handle()); }

 private:
  asio::io_context io_;
  std::unique_ptr<ssl::context> context_;
  ssl::stream<tcp::socket> stream_;
  beast::flat_buffer buffer_;
};

// Polls GET /health over TLS until it answers 200.
bool wait_ready_over_tls(server_process& server) {
  for (int attempt = 0; attempt < 600 && server.running(); ++attempt) {
    try {
      if (tls_connection(server.port()).get("/health").status == 200) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

server_process& tls_server() {
  static server_process instance(tls_arguments({"--threads", "1", "--read-timeout", "2"}));
  static const bool ready = wait_ready_over_tls(instance);
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

std::string request_body(const std::string& name) {
  return read_file(fixture_path("prepare/requests/" + name + ".json"));
}

// The failed handshakes the server counts, from /metrics.
long handshake_failures(server_process& server) {
  const std::string text = tls_connection(server.port()).get("/metrics").body;
  const std::string name = "\ncua_s1_tls_handshake_failures_total ";
  const size_t at = text.find(name);
  BOOST_TEST_REQUIRE(at != std::string::npos, text);
  return std::stol(text.substr(at + name.size()));
}

// What a raw TCP client receives until the server closes (or 30 s pass: then "timeout").
std::string read_until_closed(tcp::socket& socket) {
  timeval limit{30, 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string received;
  char chunk[4096];
  while (true) {
    const ssize_t got = ::recv(socket.native_handle(), chunk, sizeof chunk, 0);
    if (got > 0) {
      received.append(chunk, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return "timeout";
    return received;  // closed (0) or reset
  }
}

std::string request_text(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The status of the "request" log line of `request_id`, 0 when there is none (yet).
int logged_status(server_process& server, const std::string& request_id) {
  int status = 0;
  server.wait_for_log(
      [&](const boost::json::object& line) {
        if (!line.contains("event") || line.at("event") != "request" ||
            !line.contains("request_id") || line.at("request_id") != request_id.c_str())
          return false;
        status = static_cast<int>(line.at("status").to_number<int64_t>());
        return true;
      },
      std::chrono::seconds(600));
  return status;
}

bool logged(server_process& server, const std::string& event) {
  return server.wait_for_log(
      [&](const boost::json::object& line) {
        return line.contains("event") && line.at("event") == event.c_str();
      },
      std::chrono::seconds(30));
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_https_decision_is_answered_like_plain_http) {
  server_process plain({"--threads", "1"});
  BOOST_TEST_REQUIRE(plain.wait_ready(), plain.log());
  const std::string body = request_body("std-small");
  const http_reply expected = http_connection(plain.port()).post("/v1/systemone", body);
  BOOST_TEST_REQUIRE(expected.status == 200, expected.body);

  const http_reply reply = tls_connection(tls_server().port()).post("/v1/systemone", body);
  BOOST_TEST(reply.status == 200);
  BOOST_TEST(reply.content_type == expected.content_type);
  BOOST_TEST(reply.body == expected.body);
  BOOST_TEST(!reply.request_id.empty());
}

BOOST_AUTO_TEST_CASE(one_tls_connection_carries_several_requests_with_alpn_http_1_1) {
  tls_connection connection(tls_server().port());
  BOOST_TEST(connection.alpn() == "http/1.1");
  BOOST_TEST(connection.version() == TLS1_3_VERSION);
  BOOST_TEST(connection.get("/health").status == 200);
  const http_reply decision = connection.post("/v1/systemone", request_body("std-small"));
  BOOST_TEST(decision.status == 200, decision.body);
  BOOST_TEST(connection.post("/v1/systemone", "{").status == 400);
  BOOST_TEST(connection.get("/health/ready").status == 200);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_in_one_tls_record_are_all_answered) {
  tls_connection connection(tls_server().port());
  const std::string small = request_body("std-small");
  const std::string both =
      request_text("/v1/systemone", small) + request_text("/v1/systemone", "{");
  const std::vector<int> statuses = connection.pipeline(both, 2);
  BOOST_TEST(statuses == std::vector<int>({200, 400}), boost::test_tools::per_element());
  BOOST_TEST(connection.get("/health").status == 200);
}

BOOST_AUTO_TEST_CASE(a_tls_client_that_hangs_up_cancels_its_waiting_work) {
  // One decode thread: the large requests keep it busy while the hung-up one waits its turn.
  server_process server(
      tls_arguments({"--threads", "1", "--decode-threads", "1", "--request-timeout", "600"}));
  BOOST_TEST_REQUIRE(wait_ready_over_tls(server), server.log());
  const unsigned short port = server.port();
  const std::string slow = request_body("bnd-maximum");
  std::vector<std::future<http_reply>> busy;
  for (int i = 0; i < 2; ++i)
    busy.push_back(std::async(std::launch::async, [port, slow] {
      return tls_connection(port).post("/v1/systemone", slow);
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let them be admitted first
  tls_connection(port).post_and_hang_up(request_body("std-small"), "tls-hung-up");
  for (auto& reply : busy) BOOST_TEST(reply.get().status == 200);
  // Dropped unrun, answered 499 to nobody.
  BOOST_TEST(logged_status(server, "tls-hung-up") == 499, server.log());
  BOOST_TEST(tls_connection(port).post("/v1/systemone", request_body("std-small")).status == 200);
}

BOOST_AUTO_TEST_CASE(tls_1_2_is_served_and_tls_1_1_refused) {
  server_process& server = tls_server();
  tls_connection tls12(server.port(), client_context(TLS1_2_VERSION, TLS1_2_VERSION));
  BOOST_TEST(tls12.version() == TLS1_2_VERSION);
  BOOST_TEST(tls12.get("/health").status == 200);

  const long failures_before = handshake_failures(server);
  // An old client: TLS 1.1 at most, with the ciphers and security level it would allow.
  auto old_client = client_context(TLS1_1_VERSION, TLS1_1_VERSION);
  SSL_CTX_set_security_level(old_client->native_handle(), 0);
  SSL_CTX_set_cipher_list(old_client->native_handle(), "DEFAULT:@SECLEVEL=0");
  std::string refusal;
  try {
    tls_connection old(server.port(), std::move(old_client));
  } catch (const boost::system::system_error& error) {
    refusal = error.code().message();
  }
  // The server's alert, not a client that could not even start.
  BOOST_TEST(refusal.find("protocol version") != std::string::npos, refusal);
  BOOST_TEST(handshake_failures(server) == failures_before + 1);
}

BOOST_AUTO_TEST_CASE(a_wss_websocket_decision_is_answered) {
  server_process& server = tls_server();
  const std::string body = request_body("std-small");
  const http_reply expected = tls_connection(server.port()).post("/v1/systemone", body);
  BOOST_TEST_REQUIRE(expected.status == 200, expected.body);

  asio::io_context io;
  auto context = client_context();
  websocket::stream<ssl::stream<tcp::socket>> ws(io, *context);
  beast::get_lowest_layer(ws).connect({asio::ip::make_address("127.0.0.1"), server.port()});
  ws.next_layer().handshake(ssl::stream_base::client);
  ws.handshake("localhost", "/v1/systemone/ws");
  for (int i = 0; i < 2; ++i) {
    ws.text(true);
    ws.write(asio::buffer(body));
    beast::flat_buffer buffer;
    ws.read(buffer);
    const auto reply = boost::json::parse(beast::buffers_to_string(buffer.data())).as_object();
    BOOST_TEST(reply.at("status").to_number<int>() == 200);
    BOOST_TEST(reply.at("sequence").to_number<int>() == i);
    BOOST_TEST(reply.at("body") == boost::json::parse(expected.body));
  }
  ws.close(websocket::close_code::normal);
}

BOOST_AUTO_TEST_CASE(plain_http_and_a_stalled_handshake_are_closed_without_harming_others) {
  server_process& server = tls_server();
  const long failures_before = handshake_failures(server);
  asio::io_context io;
  const tcp::endpoint endpoint{asio::ip::make_address("127.0.0.1"), server.port()};
  tcp::socket stalled(io);  // connects and never sends its ClientHello
  stalled.connect(endpoint);
  tcp::socket half(io);  // sends the start of a ClientHello, then nothing
  half.connect(endpoint);
  asio::write(half, asio::buffer(std::string("\x16\x03\x01\x02\x00\x01", 6)));

  tcp::socket plain(io);
  plain.connect(endpoint);
  asio::write(plain, asio::buffer(std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")));
  const std::string answer = read_until_closed(plain);
  BOOST_TEST(answer != "timeout");
  BOOST_TEST(answer.rfind("HTTP/", 0) != 0, answer);  // no clear-text answer

  // Meanwhile a TLS client is served.
  tls_connection other(server.port());
  BOOST_TEST(other.post("/v1/systemone", request_body("std-small")).status == 200);

  // The stalled handshakes are given up at the read timeout (2 s).
  BOOST_TEST(read_until_closed(stalled) == "");
  BOOST_TEST(read_until_closed(half) != "timeout");
  BOOST_TEST(other.get("/health").status == 200);
  BOOST_TEST(handshake_failures(server) == failures_before + 3);
  BOOST_TEST(logged(server, "tls_handshake_failed"), server.log());
}

BOOST_AUTO_TEST_CASE(sigterm_drains_tls_connections) {
  server_process server(tls_arguments({"--threads", "1", "--decode-threads", "1", "--drain-timeout",
                                       "600", "--request-timeout", "600"}));
  BOOST_TEST_REQUIRE(wait_ready_over_tls(server), server.log());
  const std::string body = request_body("bnd-maximum");
  const unsigned short port = server.port();
  std::vector<std::future<http_reply>> replies;
  for (int i = 0; i < 3; ++i)
    replies.push_back(std::async(std::launch::async, [port, body] {
      try {
        return tls_connection(port).post("/v1/systemone", body);
      } catch (const std::exception&) {
        return http_reply{};
      }
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let them be admitted
  server.signal(SIGTERM);
  BOOST_TEST_REQUIRE(logged(server, "shutdown"), server.log());
  for (auto& reply : replies) {
    const http_reply r = reply.get();
    BOOST_TEST(r.status == 200, r.body);
  }
  BOOST_TEST(server.wait_exit() == 0, server.log());
}

BOOST_AUTO_TEST_CASE(start_up_refuses_a_missing_unreadable_or_mismatched_key) {
  {
    server_process server({"--tls-cert", files().certificate});
    BOOST_TEST(server.wait_exit() == 2);
    BOOST_TEST(server.log().find("--tls-cert needs --tls-key") != std::string::npos, server.log());
  }
  {
    server_process server({"--tls-cert", files().certificate, "--tls-key",
                           (files().directory / "absent.pem").string()});
    BOOST_TEST(server.wait_exit() == 2);
    BOOST_TEST(server.log().find("cannot read the TLS key") != std::string::npos, server.log());
  }
  {
    server_process server({"--tls-cert", files().certificate, "--tls-key", files().other_key});
    BOOST_TEST(server.wait_exit() == 2);
    BOOST_TEST(server.log().find("does not belong to the certificate") != std::string::npos,
               server.log());
  }
  {
    server_process server({"--tls-cert", files().key, "--tls-key", files().key});
    BOOST_TEST(server.wait_exit() == 2);
    BOOST_TEST(server.log().find("not a usable PEM certificate chain") != std::string::npos,
               server.log());
  }
}

// Its own server, stopped with SIGTERM: a sanitizer build's leak check then covers every TLS
// path taken (a leak makes the exit status non-zero).
BOOST_AUTO_TEST_CASE(concurrent_tls_clients_are_all_served_and_nothing_leaks) {
  server_process server(tls_arguments({"--threads", "1"}));
  BOOST_TEST_REQUIRE(wait_ready_over_tls(server), server.log());
  const unsigned short port = server.port();
  const std::string small = request_body("std-small");
  std::vector<std::future<int>> clients;
  for (int c = 0; c < 8; ++c)
    clients.push_back(std::async(std::launch::async, [port, small, c] {
      int answered = 0;
      for (int i = 0; i < 4; ++i) {
        if ((c + i) % 3 == 0) {  // a client that gives up in its handshake, or speaks plain HTTP
          asio::io_context io;
          tcp::socket socket(io);
          socket.connect({asio::ip::make_address("127.0.0.1"), port});
          asio::write(socket, asio::buffer(c % 2 ? std::string("\x16\x03\x01\x02\x00\x01", 6)
                                                 : std::string("GET / HTTP/1.1\r\n\r\n")));
          continue;
        }
        tls_connection connection(port);
        answered += connection.post("/v1/systemone", small).status == 200;
        answered += connection.get("/health").status == 200;
      }
      return answered;
    }));
  int answered = 0, expected = 0;
  for (int c = 0; c < 8; ++c) {
    answered += clients[c].get();
    for (int i = 0; i < 4; ++i) expected += (c + i) % 3 == 0 ? 0 : 2;
  }
  BOOST_TEST(answered == expected);
  BOOST_TEST(tls_connection(port).get("/health").status == 200);
  server.signal(SIGTERM);
  BOOST_TEST(server.wait_exit() == 0, server.log());
}
