// The real cua-s1-server under 16 concurrent clients on the bundled tiny model, its passes held
// open (--batch-wait-us) so that concurrent requests share them: every answer is byte-identical
// to the same request's answer sent alone (the CPU backend runs a pass's requests one after
// another, each deterministic), each decision's "request" log line names its pass, and the pass
// metrics count every request the model ran.
#define BOOST_TEST_MODULE server_batching
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <set>
#include <thread>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1::test;

namespace {

// Sixteen different requests: images of several sizes and formats, one to eight questions
// ("std-small, asked otherwise": the same screenshot with other instructions).
const std::vector<std::string> bodies_named = {
    "std-small",  "std-wide",          "std-portrait",   "std-jpeg",
    "std-single-option", "std-26-options", "std-two-questions", "bnd-maximum",
    "bnd-narrow", "bnd-noise",         "bnd-tiny-eight", "ext-jpeg444",
    "ext-jpeg444-gray", "ext-rgba-palette", "ext-tall", "std-small, asked otherwise"};

std::string request_body(const std::string& name) {
  if (name == "std-small, asked otherwise") {
    auto value = boost::json::parse(request_body("std-small"));
    auto& question = value.as_object()["questions"].as_object().begin()->value().as_object();
    question["instructions"] = "Leave the form without saving.";
    return boost::json::serialize(value);
  }
  return read_file(fixture_path("prepare/requests/" + name + ".json"));
}

// The value of `name` (a metric without labels) in a Prometheus exposition.
double metric(const std::string& exposition, const std::string& name) {
  const size_t at = exposition.find("\n" + name + " ");
  BOOST_TEST_REQUIRE(at != std::string::npos, name);
  return std::stod(exposition.substr(at + name.size() + 2));
}

// The "pass" of the "request" log line of `request_id` (0 when the line has none).
int64_t logged_pass(server_process& server, const std::string& request_id) {
  int64_t pass = -1;
  const bool found = server.wait_for_log(
      [&](const boost::json::object& line) {
        if (!line.contains("event") || line.at("event") != "request" ||
            !line.contains("request_id") || line.at("request_id") != request_id.c_str())
          return false;
        pass = line.contains("pass") ? line.at("pass").to_number<int64_t>() : 0;
        return true;
      },
      std::chrono::seconds(30));
  BOOST_TEST(found, request_id);
  return pass;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sixteen_concurrent_clients_get_the_answers_of_requests_sent_alone) {
  // A pass waits up to 0.2 s to fill (8 requests at most, the default): the concurrent
  // requests share passes; each request sent alone has a pass of its own.
  server_process server({"--threads", "2", "--batch-wait-us", "200000"});
  BOOST_TEST_REQUIRE(server.wait_ready(), server.log());
  const unsigned short port = server.port();
  const size_t clients = bodies_named.size();
  BOOST_TEST_REQUIRE(clients == 16u);

  std::vector<std::string> alone;
  {
    http_connection connection(port);
    for (const auto& name : bodies_named) {
      http_reply reply = connection.post("/v1/systemone", request_body(name));
      BOOST_TEST_REQUIRE(reply.status == 200, name << ": " << reply.body);
      alone.push_back(reply.body);
    }
  }

  std::vector<http_reply> together(clients);
  std::atomic<size_t> connected{0};
  std::vector<std::thread> threads;
  for (size_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      http_connection connection(port);
      const std::string body = request_body(bodies_named[c]);
      ++connected;
      while (connected.load() < clients) std::this_thread::yield();  // send all at once
      together[c] = connection.post("/v1/systemone", body);
    });
  }
  for (auto& t : threads) t.join();

  std::set<int64_t> passes;
  for (size_t c = 0; c < clients; ++c) {
    BOOST_TEST_CONTEXT(bodies_named[c]) {
      BOOST_TEST(together[c].status == 200);
      BOOST_TEST(together[c].body == alone[c]);
      const int64_t pass = logged_pass(server, together[c].request_id);
      BOOST_TEST(pass > 0);
      passes.insert(pass);
    }
  }
  BOOST_TEST_MESSAGE("16 concurrent requests ran in " << passes.size() << " passes");

  // Every request the model ran is in the pass metrics once: the warmup, 16 alone, 16 together;
  // and every pass: one each for the warmup and the requests alone, and those just counted.
  http_connection connection(port);
  const std::string exposition = connection.get("/metrics").body;
  BOOST_TEST(metric(exposition, "cua_s1_pass_requests_sum") == 33.0, exposition);
  BOOST_TEST(metric(exposition, "cua_s1_pass_requests_count") == 17.0 + double(passes.size()),
             exposition);
}
