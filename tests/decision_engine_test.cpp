// The engine's admission order: the request slot is taken before the body is decoded (a full
// engine refuses even a malformed body with 503), the questions count once the body is parsed,
// and every path gives its capacity back before it answers.
#define BOOST_TEST_MODULE decision_engine
#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "actors/decision_engine.hpp"
#include "server/serving_model.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

std::string request_fixture(const std::string& name) {
  return read_file(fixture_path("prepare/requests/" + name));
}

// A backend whose runs wait (on the executor's thread) until the test opens the gate, then give
// zero logits.
class gated_backend final : public backend {
 public:
  struct gate {
    std::mutex mutex;
    std::condition_variable opened_changed;
    bool opened = false;
    void open() {
      std::lock_guard lock(mutex);
      opened = true;
      opened_changed.notify_all();
    }
  };

  explicit gated_backend(std::shared_ptr<gate> gate) : gate_(std::move(gate)) {}

  outcome<std::vector<question_logits>> run(const prepared_request& request) override {
    std::unique_lock lock(gate_->mutex);
    gate_->opened_changed.wait(lock, [&] { return gate_->opened; });
    std::vector<question_logits> out(request.questions.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i].logits.assign(request.questions[i].letter_ids.size(), 0.0f);
    return out;
  }
  std::string description() const override { return "gated"; }

 private:
  std::shared_ptr<gate> gate_;
};

// An engine over the bundled tiny model's preparer and the gated backend, its completions run
// by an io_context on a thread of its own.
struct engine_fixture {
  std::shared_ptr<gated_backend::gate> gate = std::make_shared<gated_backend::gate>();
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread runner;
  std::unique_ptr<decision_engine> engine;

  explicit engine_fixture(admission_limits limits) {
    server_options options;
    options.threads = 1;
    auto loaded = load_serving_model(options);
    BOOST_TEST_REQUIRE(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));
    engine_options settings;
    settings.identity = loaded->identity;
    settings.limits = limits;
    engine = std::make_unique<decision_engine>(io.get_executor(), loaded->preparer,
                                               std::make_unique<gated_backend>(gate), settings);
    runner = std::thread([this] { io.run(); });
  }

  ~engine_fixture() {
    gate->open();
    engine.reset();
    work.reset();
    runner.join();
  }

  decision_response decide(std::string body) {
    return engine->async_decide(std::move(body), boost::asio::use_future).get();
  }
};

void require_at_capacity(const decision_response& response) {
  BOOST_TEST(response.status == 503);
  BOOST_TEST(response.body == R"({"detail":"server at capacity, retry later"})");
  BOOST_TEST(response.retry_after_seconds == 1);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_full_engine_refuses_before_decoding_the_body) {
  engine_fixture f({.max_requests = 1, .max_questions = 64});
  auto running = f.engine->async_decide(request_fixture("std-small.json"), boost::asio::use_future);
  BOOST_TEST(f.engine->queued_requests() == 1u);  // admitted on the caller's thread

  require_at_capacity(f.decide("[]"));  // not even parsed: the slot comes first
  require_at_capacity(f.decide(request_fixture("std-small.json")));
  BOOST_TEST(f.engine->queued_requests() == 1u);  // the refusals reserved nothing

  f.gate->open();
  BOOST_TEST(running.get().status == 200);
  BOOST_TEST(f.engine->queued_requests() == 0u);  // released before the answer

  const decision_response malformed = f.decide("[]");  // with room, the body is decoded
  BOOST_TEST(malformed.status == 400);
  BOOST_TEST(malformed.retry_after_seconds == 0);
  BOOST_TEST(f.engine->queued_requests() == 0u);
}

BOOST_AUTO_TEST_CASE(the_questions_count_once_the_body_is_parsed) {
  engine_fixture f({.max_requests = 4, .max_questions = 1});
  f.gate->open();
  require_at_capacity(f.decide(request_fixture("std-two-questions.json")));
  BOOST_TEST(f.engine->queued_requests() == 0u);  // its request slot was given back
  const decision_response one_question = f.decide(request_fixture("std-small.json"));
  BOOST_TEST(one_question.status == 200, one_question.body);
  BOOST_TEST(f.engine->queued_requests() == 0u);
}

BOOST_AUTO_TEST_CASE(a_request_that_fails_to_prepare_gives_its_capacity_back) {
  engine_fixture f({.max_requests = 1, .max_questions = 8});
  f.gate->open();
  std::string body = request_fixture("std-small.json");
  const std::string marker = "base64,";
  const size_t image = body.find(marker);
  BOOST_TEST_REQUIRE(image != std::string::npos);
  body.insert(image + marker.size(), "AAAA");  // no longer a PNG
  const decision_response broken = f.decide(body);
  BOOST_TEST(broken.status == 422, broken.body);
  BOOST_TEST(f.engine->queued_requests() == 0u);
  BOOST_TEST(f.decide(request_fixture("std-small.json")).status == 200);  // the slot is free
}
