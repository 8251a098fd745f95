// The real cua-s1-server process on loopback with the bundled tiny model: health, the live-check
// invalid inputs, 400/422 paths, answers equal to the engine called in-process, concurrency, and
// a model that fails to load.
#define BOOST_TEST_MODULE server_integration
#include <boost/test/unit_test.hpp>

#include <boost/asio/use_future.hpp>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>

#include "actors/decision_engine.hpp"
#include "codec_test_support.hpp"
#include "server/serving_model.hpp"
#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;
namespace fs = std::filesystem;

namespace {

// One server for the whole module (start-up includes the warmup decision).
struct shared_server {
  server_process process{{"--threads", "2"}};
  shared_server() { BOOST_TEST_REQUIRE(process.wait_ready(), process.log()); }
};

server_process& server() {
  static shared_server instance;
  return instance.process;
}

std::string request_body(const std::string& name) {
  return read_file(fixture_path("prepare/requests/" + name + ".json"));
}

const std::vector<std::string> corpus = {"std-small",        "std-wide",       "std-portrait",
                                         "std-jpeg",         "std-single-option", "std-26-options",
                                         "std-two-questions", "bnd-maximum",  "bnd-narrow",
                                         "bnd-noise",        "bnd-tiny-eight"};

// The same body with `edit` applied to its parsed JSON object.
template <class Edit>
std::string edited(const std::string& name, Edit edit) {
  auto value = boost::json::parse(request_body(name));
  edit(value.as_object());
  return boost::json::serialize(value);
}

std::string detail_of(const http_reply& reply) {
  auto value = boost::json::parse(reply.body);
  const auto& object = value.as_object();
  BOOST_TEST_REQUIRE(object.size() == 1u);
  return std::string(object.at("detail").as_string());
}

// Answers of the engine called in-process (no HTTP) on the same bundled model: the reference
// bodies the server must reproduce byte for byte.
std::map<std::string, std::string> direct_answers() {
  server_options options;
  options.threads = 2;  // as the server: fp32 sums depend on the BLAS thread split
  auto loaded = load_serving_model(options);
  BOOST_TEST_REQUIRE(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));
  boost::asio::io_context io;
  engine_options settings;
  settings.identity = loaded->identity;
  decision_engine engine(io.get_executor(), loaded->preparer, std::move(loaded->model), settings);
  std::map<std::string, std::string> out;
  auto guard = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  for (const auto& name : corpus) {
    auto answer = engine.async_decide(request_body(name), boost::asio::use_future).get();
    BOOST_TEST_REQUIRE(answer.status == 200, name << ": " << answer.body);
    out[name] = answer.body;
  }
  guard.reset();
  io.stop();
  runner.join();
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(health_reports_the_bundled_model) {
  http_connection connection(server().port());
  auto health = connection.get("/health");
  BOOST_TEST(health.status == 200);
  auto body = boost::json::parse(health.body).as_object();
  BOOST_TEST(body.at("status") == "ready");
  BOOST_TEST(!body.at("model").as_string().empty());
  BOOST_TEST(health.body.find("bundled tiny model") != std::string::npos, health.body);
  BOOST_TEST(connection.get("/health/live").status == 200);
  BOOST_TEST(connection.get("/health/ready").status == 200);
  BOOST_TEST(server().log().find("bundled tiny model") != std::string::npos);
}

// Built in this tree and not installed, the server finds the bundled tiny model in the source
// tree (the second place of its search order) and logs the directories it serves.
BOOST_AUTO_TEST_CASE(the_log_names_the_bundled_model_directories_served) {
  const std::string log = server().log();
  const size_t event = log.find("\"event\":\"model_loaded\"");
  BOOST_TEST_REQUIRE(event != std::string::npos, log);
  const size_t begin = log.rfind('\n', event) + 1;  // npos + 1 == 0 on the first line
  const auto line = boost::json::parse(log.substr(begin, log.find('\n', event) - begin)).as_object();
  BOOST_TEST_REQUIRE(line.contains("model_dir"));
  BOOST_TEST_REQUIRE(line.contains("adapter_dir"));
  BOOST_TEST(fs::equivalent(std::string(line.at("model_dir").as_string()), fixture_path("tiny/base")),
             line.at("model_dir"));
  BOOST_TEST(fs::equivalent(std::string(line.at("adapter_dir").as_string()),
                            fixture_path("tiny/multimodal")),
             line.at("adapter_dir"));
}

BOOST_AUTO_TEST_CASE(answers_equal_the_engine_called_directly) {
  const auto expected = direct_answers();
  http_connection connection(server().port());
  const std::string model = std::string(boost::json::parse(connection.get("/health").body)
                                            .as_object().at("model").as_string());
  for (const auto& name : corpus) {
    BOOST_TEST_CONTEXT(name) {
      auto reply = connection.post("/v1/systemone", request_body(name));
      BOOST_TEST_REQUIRE(reply.status == 200, reply.body);
      BOOST_TEST(reply.content_type == "application/json");
      BOOST_TEST(reply.body == expected.at(name));
      // Contract shape: model, answers in question order, probabilities in criteria order.
      auto answer = boost::json::parse(reply.body).as_object();
      BOOST_TEST(std::string(answer.at("model").as_string()) == model);
      auto request = boost::json::parse(request_body(name)).as_object();
      const auto& questions = request.at("questions").as_object();
      const auto& answers = answer.at("answers").as_object();
      BOOST_TEST_REQUIRE(answers.size() == questions.size());
      auto question = questions.begin();
      for (const auto& [qname, qanswer] : answers) {
        BOOST_TEST(qname == question->key());
        const auto& a = qanswer.as_object();
        BOOST_TEST(a.at("type") == "choice");
        const auto& criteria = question->value().as_object().at("criteria").as_object();
        const auto& probabilities = a.at("probabilities").as_object();
        BOOST_TEST_REQUIRE(probabilities.size() == criteria.size());
        double sum = 0, best = -1, entropy = 0;
        std::string argmax;
        auto option = criteria.begin();
        for (const auto& [key, p] : probabilities) {
          BOOST_TEST(key == option->key());
          const double v = p.to_number<double>();
          sum += v;
          if (v > 0) entropy -= v * std::log(v);
          if (v > best) best = v, argmax = key;  // strict: the earliest option wins a tie
          ++option;
        }
        BOOST_TEST(std::abs(sum - 1.0) < 1e-5);
        BOOST_TEST(a.at("choice").as_string() == argmax);
        const double n = static_cast<double>(criteria.size());
        const double confidence = n > 1 ? 1.0 - entropy / std::log(n) : 1.0;
        BOOST_TEST(std::abs(a.at("confidence").to_number<double>() - confidence) < 1e-7);
        ++question;
      }
      const auto& usage = answer.at("usage").as_object();
      BOOST_TEST(usage.at("output_tokens").to_number<int64_t>() == 0);
      BOOST_TEST(usage.at("input_tokens").to_number<int64_t>() > 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(concurrent_bodies_equal_serial_bodies) {
  std::vector<std::string> names;
  for (int round = 0; round < 2; ++round) names.insert(names.end(), corpus.begin(), corpus.end());
  BOOST_TEST_REQUIRE(names.size() == 22u);
  std::vector<std::string> serial;
  {
    http_connection connection(server().port());
    for (const auto& name : names) serial.push_back(connection.post("/v1/systemone", request_body(name)).body);
  }
  std::vector<std::string> concurrent(names.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> clients;
  const unsigned short port = server().port();  // here: Boost.Test is not thread-safe
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      http_connection connection(port);
      for (size_t i; (i = next.fetch_add(1)) < names.size();)
        concurrent[i] = connection.post("/v1/systemone", request_body(names[i])).body;
    });
  }
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < names.size(); ++i) {
    BOOST_TEST_CONTEXT(names[i]) {
      BOOST_TEST(serial[i].find("\"answers\"") != std::string::npos, serial[i]);
      BOOST_TEST(concurrent[i] == serial[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_nine_invalid_inputs_of_the_live_check) {
  http_connection connection(server().port());
  struct invalid_case {
    std::string body;
    int status;
  };
  std::string nine;
  const std::vector<invalid_case> cases = {
      {R"({"a":1,"a":2})", 400},
      {R"({"x":NaN})", 400},
      {"[]", 400},
      {"{}", 422},
      {edited("std-small", [](auto& o) { o["state"].as_object()["image"] = "https://example.invalid/a.png"; }), 422},
      {edited("std-small", [](auto& o) {
         auto& q = o["questions"].as_object().begin()->value().as_object();
         q["instructions"] = "<|image_pad|>";
       }), 422},
      {edited("std-small", [](auto& o) {
         auto first = o["questions"].as_object().begin()->value();
         boost::json::object nine_questions;
         for (int i = 0; i < 9; ++i) nine_questions[std::to_string(i)] = first;
         o["questions"] = nine_questions;
       }), 422},
      {edited("std-small", [](auto& o) { o["extra"] = true; }), 422},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.body.substr(0, 80)) {
      auto reply = connection.post("/v1/systemone", c.body);
      BOOST_TEST(reply.status == c.status);
      BOOST_TEST(!detail_of(reply).empty());
    }
  }
  // 9: 8 MiB + 1 bytes of spaces is refused from its Content-Length, on a fresh connection.
  http_connection big(server().port());
  auto reply = big.post("/v1/systemone", std::string(8 * 1024 * 1024 + 1, ' '));
  BOOST_TEST(reply.status == 413);
  BOOST_TEST(!detail_of(reply).empty());
  // The server still answers afterwards.
  BOOST_TEST(http_connection(server().port()).post("/v1/systemone", request_body("std-small")).status == 200);
}

BOOST_AUTO_TEST_CASE(every_json_decoding_rejection_over_http) {
  http_connection connection(server().port());
  size_t sent = 0;
  const auto cases = read_json_fixture("api/decode_cases.json");
  for (const auto& item : cases.as_array()) {
    const auto& c = item.as_object();
    if (c.at("status").to_number<int>() != 400) continue;
    auto reply = connection.post("/v1/systemone", base64_decode(std::string(c.at("body_base64").as_string())));
    BOOST_TEST_CONTEXT("case " << sent) {
      BOOST_TEST(reply.status == 400);
      BOOST_TEST(detail_of(reply) == c.at("detail").as_string());
    }
    ++sent;
  }
  BOOST_TEST(sent > 300u);
}

BOOST_AUTO_TEST_CASE(contract_and_image_rejections_over_http) {
  http_connection connection(server().port());
  struct rejection {
    std::string body;
    std::string detail;
  };
  auto with_question = [](auto edit) {
    return edited("std-small", [&](auto& o) {
      edit(o["questions"].as_object().begin()->value().as_object());
    });
  };
  const std::vector<rejection> cases = {
      {R"({"model":"other","state":{},"questions":{}})", "model must be cua-s1-4b-0.2"},
      {edited("std-small", [](auto& o) { o["questions"] = boost::json::object(); }),
       "questions must contain 1 to 8 questions"},
      {with_question([](auto& q) { q["type"] = "score"; }), "only choice questions are supported"},
      {with_question([](auto& q) { q["x"] = 1; }), "unsupported question fields"},
      {with_question([](auto& q) { q.erase("instructions"); }), "instructions is required for every question"},
      {with_question([](auto& q) { q["criteria"] = boost::json::object(); }), "choice requires 1 to 26 options"},
      {with_question([](auto& q) { q["criteria"] = {{"a", 1}}; }), "criteria must be a string, object or array"},
      {edited("std-small", [](auto& o) { o["state"] = {{"image", "data:image/png;base64,AAA"}}; }),
       "invalid image data"},
      {edited("std-small", [](auto& o) { o["state"] = {{"image", "data:image/gif;base64,AAAA"}}; }),
       "only inline PNG/JPEG images are supported"},
      {edited("std-small", [](auto& o) { o["state"] = {{"image", 7}}; }),
       "state.image must be a PNG/JPEG base64 data URL"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.detail) {
      auto reply = connection.post("/v1/systemone", c.body);
      BOOST_TEST(reply.status == 422);
      BOOST_TEST(detail_of(reply) == c.detail);
    }
  }
  // Every refused image of the codec fixtures, sent as a screenshot, gets its 422 detail.
  size_t images = 0;
  for (const auto& c : codec_test::load_manifest()) {
    if (c.status != 422) continue;
    const std::string url =
        codec_test::data_url(c.mime, codec_test::read_file(codec_test::fixture_dir() + "/" + c.file));
    auto reply = connection.post("/v1/systemone", edited("std-small", [&](auto& o) {
      o["state"] = {{"image", url}};
    }));
    BOOST_TEST_CONTEXT(c.name) {
      BOOST_TEST(reply.status == 422);
      BOOST_TEST(detail_of(reply) == c.detail);
    }
    ++images;
  }
  BOOST_TEST(images > 20u);
}

BOOST_AUTO_TEST_CASE(health_is_starting_until_the_warmup_decision_succeeds) {
  // The server listens once the weights are loaded and then runs the warmup decision (~0.2 s
  // on the tiny model with one thread), so a probe right after "listening" sees it starting.
  server_process fresh({"--threads", "1"});
  http_connection connection(fresh.port());
  auto health = connection.get("/health");
  BOOST_TEST((health.status == 503 || health.status == 200));
  if (health.status == 503) {
    BOOST_TEST(health.body == R"({"status":"starting"})");
    BOOST_TEST(connection.get("/health/ready").status == 503);
    BOOST_TEST(connection.get("/health/live").status == 200);
    auto early = connection.post("/v1/systemone", request_body("std-small"));
    BOOST_TEST(early.status == 503);
    BOOST_TEST(!early.retry_after.empty());
  } else {
    BOOST_TEST_MESSAGE("the warmup finished before the first probe; only the ready state checked");
  }
  BOOST_TEST_REQUIRE(fresh.wait_ready(), fresh.log());
  BOOST_TEST(connection.get("/health").status == 200);
  BOOST_TEST(connection.post("/v1/systemone", request_body("std-small")).status == 200);
}

BOOST_AUTO_TEST_CASE(a_model_that_fails_to_load_exits_non_zero) {
  const fs::path missing = fs::temp_directory_path() / "cua-s1-no-such-model";
  server_process process({"--model", missing.string()}, std::chrono::seconds(20));
  BOOST_TEST(process.wait_exit() != 0);
  BOOST_TEST(process.log().find("model_load_failed") != std::string::npos, process.log());
  BOOST_TEST(process.log().find(missing.string()) != std::string::npos, process.log());

  // A corrupted weight file is caught by the lock before loading.
  const fs::path copy = fs::temp_directory_path() / ("cua-s1-corrupt-" + std::to_string(getpid()));
  fs::remove_all(copy);
  fs::copy(fixture_path("tiny"), copy, fs::copy_options::recursive);
  const fs::path shard = copy / "base" / "model-00002-of-00002.safetensors";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x5a');
  }
  server_process corrupt({"--model", (copy / "base").string(), "--adapter",
                          (copy / "multimodal").string(), "--lock",
                          (copy / "weights.lock.json").string()},
                         std::chrono::seconds(20));
  BOOST_TEST(corrupt.wait_exit() != 0);
  BOOST_TEST(corrupt.log().find("model-00002-of-00002.safetensors") != std::string::npos, corrupt.log());
  BOOST_TEST(corrupt.log().find("SHA-256") != std::string::npos, corrupt.log());
  fs::remove_all(copy);
}
