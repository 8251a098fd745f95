// The fatal-device-error path of the real server process, driven by CUA_S1_FAULT_INJECTION
// (the backend fails as after a sticky CUDA error once the warmup has run): the failing request
// and the requests already admitted are answered, the error is logged, and the process exits 1.
#define BOOST_TEST_MODULE server_fatal_error
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

// A server whose backend breaks after the warmup decision.
struct breaking_server {
  server_process server;
  explicit breaking_server(const char* spec, std::vector<std::string> arguments)
      : server((setenv("CUA_S1_FAULT_INJECTION", spec, 1), std::move(arguments))) {
    unsetenv("CUA_S1_FAULT_INJECTION");
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_sticky_device_error_answers_admitted_requests_then_exits_one) {
  // Timeouts far above the work: sanitizer builds on a slow CI machine take ~8 s a request.
  breaking_server broken("sticky-error-after:1",
                         {"--threads", "1", "--decode-threads", "1", "--request-timeout", "600",
                          "--drain-timeout", "600"});
  server_process& server = broken.server;
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const std::string body = read_file(fixture_path("prepare/requests/std-small.json"));
  // Connected (and accepted) before anything fails, so that none meets a closed listener.
  std::vector<std::unique_ptr<http_connection>> connections;
  for (int i = 0; i < 3; ++i) connections.push_back(std::make_unique<http_connection>(server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<std::future<http_reply>> replies;
  for (auto& connection : connections)
    replies.push_back(std::async(std::launch::async, [c = connection.get(), body] {
      return c->post("/v1/systemone", body);
    }));
  for (auto& reply : replies) {
    const http_reply answer = reply.get();  // every admitted request is answered, none is lost
    BOOST_TEST((answer.status == 500 || answer.status == 503), answer.status << " " << answer.body);
  }
  BOOST_TEST(server.wait_exit(std::chrono::seconds(120)) == 1, server.log());
  const std::string& log = server.log();
  BOOST_TEST(log.find("\"fault_injection\"") != std::string::npos, log);
  BOOST_TEST(log.find("\"fatal_backend_error\"") != std::string::npos, log);
  BOOST_TEST(log.find("injected sticky device error") != std::string::npos, log);
  BOOST_TEST(log.find("\"drained\"") != std::string::npos, log);
}

BOOST_AUTO_TEST_CASE(a_malformed_fault_injection_is_refused_with_exit_two) {
  breaking_server broken("sticky-error-after:zero", {"--threads", "1"});
  BOOST_TEST(broken.server.wait_exit(std::chrono::seconds(30)) == 2, broken.server.log());
  BOOST_TEST(broken.server.log().find("sticky-error-after:N") != std::string::npos,
             broken.server.log());
}
