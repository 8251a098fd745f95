// Test helper: starts the real cua-s1-server binary on an ephemeral loopback port, reads its
// JSON-lines stderr (sent to a temporary file, so a chatty server never blocks on a full pipe),
// and stops it; plus a minimal blocking HTTP/1.1 client (Beast).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace cua_s1::test {

// The server binary of this build, or $CUA_S1_SERVER_BINARY (tests run on the GPU host against
// the portable binaries of scripts/device-bundle).
inline std::string server_binary() {
  const char* override_path = std::getenv("CUA_S1_SERVER_BINARY");
  if (override_path && *override_path) return override_path;
  return std::string(CUA_S1_BINARY_DIR) + "/src/cua-s1-server";
}

struct http_reply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;
  std::string request_id;
};

// One keep-alive connection to 127.0.0.1:port.
class http_connection {
 public:
  explicit http_connection(unsigned short port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  http_reply send(boost::beast::http::verb verb, const std::string& target, std::string body = {},
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    namespace http = boost::beast::http;
    auto response = exchange(verb, target, std::move(body), headers);
    return {static_cast<int>(response.result_int()), response.body(),
            std::string(response[http::field::content_type]),
            std::string(response[http::field::retry_after]), std::string(response["X-Request-Id"])};
  }

  // The same request, answered with every header of the response.
  boost::beast::http::response<boost::beast::http::string_body> exchange(
      boost::beast::http::verb verb, const std::string& target, std::string body = {},
      const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    namespace http = boost::beast::http;
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, "127.0.0.1");
    if (verb == http::verb::post) request.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = std::move(body);
    request.prepare_payload();
    // A server may answer (413) and stop reading before the body is sent: read the reply anyway.
    boost::system::error_code write_error;
    http::write(socket_, request, write_error);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

  http_reply post(const std::string& target, std::string body) {
    return send(boost::beast::http::verb::post, target, std::move(body));
  }
  http_reply get(const std::string& target) { return send(boost::beast::http::verb::get, target); }

  boost::asio::ip::tcp::socket& socket() { return socket_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// The server process; killed (SIGKILL) on destruction if still running.
class server_process {
 public:
  // Starts `server_binary() arguments...` with --port 0 --host `host` appended and waits for
  // the "listening" log line (which names the port), or for exit. Clients connect to 127.0.0.1.
  explicit server_process(std::vector<std::string> arguments,
                          std::chrono::seconds timeout = std::chrono::seconds(60),
                          const std::string& host = "127.0.0.1") {
    arguments.insert(arguments.begin(), server_binary());
    arguments.insert(arguments.end(), {"--host", host, "--port", "0"});
    char path[] = "/tmp/cua-s1-server-log-XXXXXX";
    stderr_fd_ = mkstemp(path);
    if (stderr_fd_ < 0) throw std::runtime_error("mkstemp failed");
    log_path_ = path;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, path, O_WRONLY | O_APPEND, 0);
    std::vector<char*> argv;
    for (auto& a : arguments) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int spawned = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw std::runtime_error("cannot start " + arguments[0]);
    wait_for_log([this](const boost::json::object& line) {
      if (line.contains("event") && line.at("event") == "listening") {
        port_ = static_cast<unsigned short>(line.at("port").to_number<int64_t>());
        return true;
      }
      return false;
    }, timeout);
  }

  ~server_process() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stderr_fd_ >= 0) close(stderr_fd_);
    if (!log_path_.empty()) unlink(log_path_.c_str());
  }

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  unsigned short port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }

  bool running() {
    if (exited_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return false;
    }
    return true;
  }

  // Waits for the process to end (SIGKILL after `timeout`) and returns its exit status.
  int wait_exit(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      drain_stderr(50);
      if (std::chrono::steady_clock::now() > deadline) kill(pid_, SIGKILL);
    }
    drain_stderr(0);
    return exit_status_;
  }

  void signal(int number) { kill(pid_, number); }

  // Reads stderr until `accept(line)` is true for a JSON log line; false on exit or timeout.
  template <class Predicate>
  bool wait_for_log(Predicate accept, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    size_t scanned = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      drain_stderr(50);
      size_t end;
      while ((end = log_.find('\n', scanned)) != std::string::npos) {
        boost::system::error_code ec;
        auto value = boost::json::parse(std::string_view(log_).substr(scanned, end - scanned), ec);
        scanned = end + 1;
        if (!ec && value.is_object() && accept(value.as_object())) return true;
      }
      if (!running()) {
        drain_stderr(0);
        return false;
      }
    }
    return false;
  }

  // Polls GET /health until it answers 200 (true) or the timeout passes (false).
  bool wait_ready(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline && running()) {
      try {
        http_connection connection(port_);
        if (connection.get("/health").status == 200) return true;
      } catch (const std::exception&) {
      }
      drain_stderr(20);
    }
    return false;
  }

 private:
  // Appends what the server wrote since the last call, after sleeping `wait_ms`.
  void drain_stderr(int wait_ms) {
    if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    char chunk[65536];
    ssize_t n;
    while ((n = pread(stderr_fd_, chunk, sizeof chunk, static_cast<off_t>(log_.size()))) > 0)
      log_.append(chunk, static_cast<size_t>(n));
  }

  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string log_path_;
  unsigned short port_ = 0;
  bool exited_ = false;
  int exit_status_ = -1;
  std::string log_;
};

}  // namespace cua_s1::test
