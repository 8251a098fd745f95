// The real server behind nginx as a reverse proxy (the Debian package, started by this test
// with its own configuration, one process, loopback ports): decisions, errors and health answer
// with byte-identical bodies and statuses through the proxy and directly, and X-Request-Id
// passes through both ways.
#define BOOST_TEST_MODULE server_nginx
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

std::string nginx_binary() {
  for (const char* path : {"/usr/sbin/nginx", "/usr/bin/nginx"})
    if (access(path, X_OK) == 0) return path;
  return {};
}

unsigned short free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

// nginx in the foreground, master process off, everything under a temporary prefix.
class nginx_proxy {
 public:
  explicit nginx_proxy(unsigned short upstream) : port_(free_port()) {
    char pattern[] = "/tmp/cua-s1-nginx-XXXXXX";
    prefix_ = mkdtemp(pattern);
    const std::string p = prefix_.string();
    std::ofstream(p + "/nginx.conf")
        << "daemon off;\nmaster_process off;\nerror_log " << p << "/error.log warn;\n"
        << "pid " << p << "/nginx.pid;\nevents { worker_connections 128; }\n"
        << "http {\n  access_log off;\n  client_max_body_size 9m;\n  client_body_buffer_size 9m;\n"
        << "  client_body_temp_path " << p << "/body;\n  proxy_temp_path " << p << "/proxy;\n"
        << "  fastcgi_temp_path " << p << "/fastcgi;\n  uwsgi_temp_path " << p << "/uwsgi;\n"
        << "  scgi_temp_path " << p << "/scgi;\n"
        << "  upstream cua_s1 { server 127.0.0.1:" << upstream << "; keepalive 8; }\n"
        << "  server {\n    listen 127.0.0.1:" << port_ << ";\n"
        << "    location / {\n      proxy_pass http://cua_s1;\n      proxy_http_version 1.1;\n"
        << "      proxy_set_header Connection \"\";\n      proxy_read_timeout 300s;\n    }\n"
        << "  }\n}\n";
    std::vector<std::string> args = {nginx_binary(), "-p", p, "-c", p + "/nginx.conf", "-e",
                                     p + "/error.log"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
      throw std::runtime_error("cannot start nginx");
  }
  ~nginx_proxy() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(prefix_, ignored);
  }
  unsigned short port() const { return port_; }
  std::string error_log() const {
    std::ifstream in(prefix_ / "error.log");
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // Waits until nginx forwards /health/live.
  bool wait_up() {
    for (int i = 0; i < 200; ++i) {
      try {
        if (http_connection(port_).get("/health/live").status == 200) return true;
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }

 private:
  unsigned short port_;
  std::filesystem::path prefix_;
  pid_t pid_ = -1;
};

}  // namespace

BOOST_AUTO_TEST_CASE(bodies_through_nginx_equal_direct_bodies) {
  BOOST_TEST_REQUIRE(!nginx_binary().empty(),
                     "nginx is not installed (Debian package nginx-light; .ci/install-deps installs it)");
  server_process server({"--threads", "1"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  nginx_proxy proxy(server.port());
  BOOST_TEST_REQUIRE(proxy.wait_up(), proxy.error_log());

  std::vector<std::pair<std::string, std::string>> requests;  // name, body
  for (const char* name : {"std-small", "bnd-narrow", "bnd-tiny-eight", "ext-tall", "std-single-option"})
    requests.emplace_back(name, read_file(fixture_path(std::string("prepare/requests/") + name + ".json")));
  requests.emplace_back("duplicate key 400", R"({"a":1,"a":2})");
  requests.emplace_back("contract 422", R"({"model":"other","state":{},"questions":{}})");
  http_connection direct(server.port()), proxied(proxy.port());
  for (const auto& [name, body] : requests) {
    BOOST_TEST_CONTEXT(name) {
      const http_reply a = direct.post("/v1/systemone", body);
      const http_reply b = proxied.post("/v1/systemone", body);
      BOOST_TEST(a.status == b.status);
      BOOST_TEST(a.body == b.body);
      BOOST_TEST(a.content_type == b.content_type);
      BOOST_TEST((a.status == 200 || a.status == 400 || a.status == 422), a.status);
    }
  }
  for (const char* target : {"/health", "/health/ready", "/health/live", "/nowhere"}) {
    BOOST_TEST_CONTEXT(target) {
      const http_reply a = direct.get(target), b = proxied.get(target);
      BOOST_TEST(a.status == b.status);
      BOOST_TEST(a.body == b.body);
    }
  }
  const http_reply tagged = proxied.send(boost::beast::http::verb::get, "/health", {},
                                         {{"X-Request-Id", "through-nginx-1"}});
  BOOST_TEST(tagged.request_id == "through-nginx-1");
  BOOST_TEST(server.wait_for_log(
      [](const boost::json::object& line) {
        return line.contains("request_id") && line.at("request_id") == "through-nginx-1";
      },
      std::chrono::seconds(5)));
}
