// The executor actor over a backend whose runs finish when the test says: runs in submission
// order, one at a time; stop() answers queued work 503 and finishes the run in flight; expired
// and cancelled jobs are skipped; failures and exceptions are answered 500 and the next job
// runs; a sticky failure is reported once; each result carries its own run's stage seconds.
#define BOOST_TEST_MODULE executor_actor
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "actors/executor_actor.hpp"

using namespace cua_s1;

namespace {

using run_result = executor_actor::run_result;
using logits_result = outcome<std::vector<question_logits>>;

// A backend whose runs stay pending until the test completes them. A job is named by a tag, its
// request's input_tokens. start() records the tag (and whether a run was still uncollected);
// collect() returns what the test gave, and the run's stage seconds are (tag, 2 * tag).
class controlled_backend final : public backend {
 public:
  logits_result run(const prepared_request&) override {
    throw std::logic_error("the executor must call start()");
  }

  std::unique_ptr<pending_run> start(const prepared_request& request) override {
    std::lock_guard lock(mutex_);
    if (uncollected_) overlapped_ = true;
    if (throw_on_start_.count(request.input_tokens)) throw std::runtime_error("start threw");
    runs_.push_back(std::make_shared<run_control>());
    runs_.back()->tag = request.input_tokens;
    uncollected_ = true;
    last_ = {};
    changed_.notify_all();
    return std::make_unique<controlled_run>(*this, runs_.back());
  }

  bool usable() const override { return usable_.load(); }
  std::string description() const override { return "controlled"; }
  stage_seconds last_run_seconds() const override { return last_; }

  // The test's side.
  void throw_on_start(size_t tag) {
    std::lock_guard lock(mutex_);
    throw_on_start_.insert(tag);
  }
  void wait_for_runs(size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return runs_.size() >= count; });
  }
  // Makes run `index` (in start order) ready with `result`, or ready to throw from collect().
  void complete(size_t index, logits_result result) {
    std::lock_guard lock(mutex_);
    runs_.at(index)->result = std::move(result);
    runs_.at(index)->ready = true;
  }
  void complete_by_throwing(size_t index) {
    std::lock_guard lock(mutex_);
    runs_.at(index)->throw_on_collect = true;
    runs_.at(index)->ready = true;
  }
  // From now on usable() is false, as after a sticky device error.
  void break_for_good() { usable_ = false; }
  // Makes every run ready, now and later (so that a test that failed midway still ends).
  void release_everything() {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  std::vector<size_t> started_tags() const {
    std::lock_guard lock(mutex_);
    std::vector<size_t> tags;
    for (const auto& run : runs_) tags.push_back(run->tag);
    return tags;
  }
  bool overlapped() const {
    std::lock_guard lock(mutex_);
    return overlapped_;
  }

 private:
  struct run_control {
    size_t tag = 0;
    bool ready = false;
    bool throw_on_collect = false;
    logits_result result = failure{500, "never completed"};
  };

  class controlled_run final : public pending_run {
   public:
    controlled_run(controlled_backend& owner, std::shared_ptr<run_control> control)
        : owner_(owner), control_(std::move(control)) {}
    bool ready() override {
      std::lock_guard lock(owner_.mutex_);
      return control_->ready || owner_.released_;
    }
    logits_result collect() override {
      std::lock_guard lock(owner_.mutex_);
      owner_.uncollected_ = false;
      owner_.last_ = {double(control_->tag), 2.0 * double(control_->tag)};
      if (control_->throw_on_collect) throw std::runtime_error("collect threw");
      return control_->result;
    }

   private:
    controlled_backend& owner_;
    std::shared_ptr<run_control> control_;
  };

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<run_control>> runs_;
  std::set<size_t> throw_on_start_;
  bool uncollected_ = false;
  bool overlapped_ = false;
  bool released_ = false;
  stage_seconds last_;
  std::atomic<bool> usable_{true};
};

std::shared_ptr<const prepared_request> job(size_t tag) {
  auto request = std::make_shared<prepared_request>();
  request->input_tokens = tag;
  return request;
}

// One letter logit equal to `value`: tells the answers apart.
logits_result logits_of(float value) {
  return std::vector<question_logits>{question_logits{{value}}};
}

// The executor with the controlled backend, and a future for each submitted job's result.
struct actor_fixture {
  controlled_backend* model = nullptr;  // owned by the actor
  std::atomic<int> unusable_reports{0};
  std::string unusable_reason;
  std::vector<std::unique_ptr<std::promise<run_result>>> promises;
  std::unique_ptr<executor_actor> actor;  // dies first: its completions use the above

  actor_fixture() {
    auto owned = std::make_unique<controlled_backend>();
    model = owned.get();
    actor = std::make_unique<executor_actor>(std::move(owned), [this](const std::string& reason) {
      unusable_reason = reason;
      ++unusable_reports;
    });
  }

  std::future<run_result> submit(size_t tag, start_condition when = {}) {
    promises.push_back(std::make_unique<std::promise<run_result>>());
    auto* promise = promises.back().get();
    actor->submit(job(tag), [promise](run_result result) { promise->set_value(std::move(result)); },
                  std::move(when));
    return promise->get_future();
  }

  ~actor_fixture() {
    model->release_everything();
    actor.reset();
  }
};

bool is_ready(std::future<run_result>& result) {
  return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

BOOST_AUTO_TEST_CASE(runs_in_submission_order_one_at_a_time) {
  actor_fixture f;
  auto first = f.submit(1);
  auto second = f.submit(2);
  auto third = f.submit(3);

  f.model->wait_for_runs(1);
  BOOST_TEST(f.model->started_tags() == std::vector<size_t>{1});
  BOOST_TEST(!is_ready(first));
  f.model->complete(0, logits_of(1.5f));
  f.model->wait_for_runs(2);
  BOOST_TEST(!is_ready(second));  // its run is in flight until the test completes it
  f.model->complete(1, logits_of(2.5f));
  f.model->wait_for_runs(3);
  f.model->complete(2, logits_of(3.5f));

  float expected_logit = 1.5f;
  double expected_vision = 1;
  for (auto* result : {&first, &second, &third}) {
    run_result r = result->get();
    BOOST_TEST_REQUIRE(r.logits.ok());
    BOOST_TEST(r.logits->at(0).logits == std::vector<float>{expected_logit});
    BOOST_TEST(r.seconds.vision == expected_vision);  // this run's own seconds
    BOOST_TEST(r.seconds.language == 2 * expected_vision);
    expected_logit += 1;
    expected_vision += 1;
  }
  BOOST_TEST(f.model->started_tags() == (std::vector<size_t>{1, 2, 3}));
  BOOST_TEST(!f.model->overlapped());  // never a second run before the first was collected
  BOOST_TEST(f.unusable_reports.load() == 0);
}

BOOST_AUTO_TEST_CASE(stop_answers_queued_work_503_and_finishes_the_run_in_flight) {
  actor_fixture f;
  auto in_flight = f.submit(1);
  auto queued = f.submit(2);
  auto also_queued = f.submit(3);
  f.model->wait_for_runs(1);

  std::thread stopper([&] { f.actor->stop(); });
  for (auto* result : {&queued, &also_queued}) {  // answered while run 1 is still in flight
    run_result r = result->get();
    BOOST_TEST_REQUIRE(!r.logits.ok());
    BOOST_TEST(r.logits.error().status == 503);
    BOOST_TEST(r.logits.error().detail == "server is shutting down");
    BOOST_TEST(r.seconds.vision == 0.0);
    BOOST_TEST(r.seconds.language == 0.0);
  }
  BOOST_TEST(!is_ready(in_flight));
  f.model->complete(0, logits_of(7.0f));
  stopper.join();  // stop() returned: the run in flight was finished first

  BOOST_TEST_REQUIRE(is_ready(in_flight));
  run_result r = in_flight.get();
  BOOST_TEST_REQUIRE(r.logits.ok());
  BOOST_TEST(r.logits->at(0).logits == std::vector<float>{7.0f});
  BOOST_TEST(f.model->started_tags() == std::vector<size_t>{1});
}

BOOST_AUTO_TEST_CASE(an_expired_or_cancelled_job_is_skipped) {
  actor_fixture f;
  start_condition expired;
  expired.deadline = start_condition::clock::now() - std::chrono::seconds(1);
  start_condition cancelled;
  cancelled.cancelled = std::make_shared<std::atomic<bool>>(true);
  start_condition still_wanted;
  still_wanted.deadline = start_condition::clock::time_point::max();
  still_wanted.cancelled = std::make_shared<std::atomic<bool>>(false);

  auto late = f.submit(1, expired);
  auto gone = f.submit(2, cancelled);
  auto wanted = f.submit(3, still_wanted);

  run_result late_result = late.get();
  BOOST_TEST_REQUIRE(!late_result.logits.ok());
  BOOST_TEST(late_result.logits.error().status == 503);
  BOOST_TEST(late_result.logits.error().detail ==
             "request timed out before the model could run it, retry later");
  run_result gone_result = gone.get();
  BOOST_TEST_REQUIRE(!gone_result.logits.ok());
  BOOST_TEST(gone_result.logits.error().status == 499);
  BOOST_TEST(gone_result.logits.error().detail ==
             "client closed the connection before the model could run it");

  f.model->wait_for_runs(1);
  f.model->complete(0, logits_of(3.0f));
  BOOST_TEST(wanted.get().logits.ok());
  BOOST_TEST(f.model->started_tags() == std::vector<size_t>{3});  // 1 and 2 never started
}

BOOST_AUTO_TEST_CASE(a_backend_failure_answers_that_job_and_the_next_runs) {
  actor_fixture f;
  auto failed = f.submit(1);
  auto next = f.submit(2);
  f.model->wait_for_runs(1);
  f.model->complete(0, failure{500, "device hiccup"});
  run_result failed_result = failed.get();
  BOOST_TEST_REQUIRE(!failed_result.logits.ok());
  BOOST_TEST(failed_result.logits.error().status == 500);
  BOOST_TEST(failed_result.logits.error().detail == "device hiccup");

  f.model->wait_for_runs(2);
  f.model->complete(1, logits_of(2.0f));
  run_result next_result = next.get();
  BOOST_TEST_REQUIRE(next_result.logits.ok());
  BOOST_TEST(next_result.logits->at(0).logits == std::vector<float>{2.0f});
  BOOST_TEST(f.unusable_reports.load() == 0);  // the backend stayed usable
}

BOOST_AUTO_TEST_CASE(a_sticky_failure_is_reported_exactly_once) {
  actor_fixture f;
  auto broken = f.submit(1);
  auto after = f.submit(2);
  auto later = f.submit(3);
  f.model->wait_for_runs(1);
  f.model->break_for_good();
  f.model->complete(0, failure{500, "device lost"});
  BOOST_TEST(broken.get().logits.error().detail == "device lost");
  f.model->wait_for_runs(2);
  f.model->complete(1, failure{500, "backend unusable"});
  f.model->wait_for_runs(3);
  f.model->complete(2, failure{500, "backend unusable"});
  BOOST_TEST(after.get().logits.error().status == 500);
  BOOST_TEST(later.get().logits.error().status == 500);

  BOOST_TEST(f.unusable_reports.load() == 1);
  BOOST_TEST(f.unusable_reason == "device lost");  // the failure that made it unusable
}

BOOST_AUTO_TEST_CASE(an_exception_from_start_or_collect_is_500_and_the_next_runs) {
  actor_fixture f;
  f.model->throw_on_start(1);
  auto start_threw = f.submit(1);
  auto collect_threw = f.submit(2);
  auto next = f.submit(3);

  run_result start_result = start_threw.get();
  BOOST_TEST_REQUIRE(!start_result.logits.ok());
  BOOST_TEST(start_result.logits.error().status == 500);
  BOOST_TEST(start_result.logits.error().detail == "inference failed");

  f.model->wait_for_runs(1);
  f.model->complete_by_throwing(0);
  run_result collect_result = collect_threw.get();
  BOOST_TEST_REQUIRE(!collect_result.logits.ok());
  BOOST_TEST(collect_result.logits.error().status == 500);
  BOOST_TEST(collect_result.logits.error().detail == "inference failed");

  f.model->wait_for_runs(2);
  f.model->complete(1, logits_of(3.0f));
  BOOST_TEST(next.get().logits.ok());
  BOOST_TEST(f.model->started_tags() == (std::vector<size_t>{2, 3}));
  BOOST_TEST(f.unusable_reports.load() == 0);
}
