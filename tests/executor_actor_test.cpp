// The executor actor over a backend whose passes finish when the test says. One request a pass
// (the serial budget): runs in submission order, one at a time; stop() answers queued work 503
// and finishes the run in flight; expired and cancelled jobs are skipped; failures and
// exceptions are answered 500 and the next job runs; a sticky failure is reported once; each
// result carries its own run's stage seconds. Several a pass: a pass takes queued requests in
// order while they fit every budget and stops at the first that does not; a request over a
// budget runs alone; cancelled and expired requests are dropped before their pass; one
// request's failure leaves its pass-mates' answers alone; stop() answers everything; requests
// queued during a pass form the next; --batch-wait-us holds a pass back until it is full.
#define BOOST_TEST_MODULE executor_actor
#include <boost/test/unit_test.hpp>

#include <algorithm>
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

// A backend whose passes ("runs") stay pending until the test completes them. A job is named by
// a tag, its request's input_tokens. start() records the pass's tags (and whether a pass was
// still uncollected), and can be held inside until the test lets it return; collect() returns
// what the test gave, and the pass's stage seconds are (sum of its tags, twice that).
class controlled_backend final : public backend {
 public:
  logits_result run(const prepared_request&) override {
    throw std::logic_error("the executor must call start()");
  }

  std::unique_ptr<pending_run> start(request_batch requests) override {
    std::unique_lock lock(mutex_);
    if (uncollected_) overlapped_ = true;
    for (const prepared_request* request : requests)
      if (throw_on_start_.count(request->input_tokens)) throw std::runtime_error("start threw");
    runs_.push_back(std::make_shared<run_control>());
    for (const prepared_request* request : requests) runs_.back()->tags.push_back(request->input_tokens);
    uncollected_ = true;
    auto control = runs_.back();
    changed_.notify_all();
    changed_.wait(lock, [&] { return !hold_start_; });  // the actor's thread waits here
    return std::make_unique<controlled_run>(*this, control);
  }

  bool usable() const override { return usable_.load(); }
  std::string description() const override { return "controlled"; }

  // The test's side.
  void throw_on_start(size_t tag) {
    std::lock_guard lock(mutex_);
    throw_on_start_.insert(tag);
  }
  // While held, start() records its pass and then does not return (the actor's thread waits):
  // what the test submits meanwhile is queued before the actor polls that pass.
  void hold_starts(bool hold) {
    std::lock_guard lock(mutex_);
    hold_start_ = hold;
    changed_.notify_all();
  }
  void wait_for_runs(size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return runs_.size() >= count; });
  }
  // Waits until the actor has asked run `index` whether it is ready.
  void wait_for_poll(size_t index) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return runs_.size() > index && runs_[index]->polls > 0; });
  }
  // Makes run `index` (in start order) ready with `result` for each of its requests, or with one
  // result per request, or ready to throw from collect().
  void complete(size_t index, logits_result result) {
    std::lock_guard lock(mutex_);
    runs_.at(index)->results.assign(runs_.at(index)->tags.size(), std::move(result));
    runs_.at(index)->ready = true;
  }
  void complete_each(size_t index, std::vector<logits_result> results) {
    std::lock_guard lock(mutex_);
    runs_.at(index)->results = std::move(results);
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
    hold_start_ = false;
    changed_.notify_all();
  }
  std::vector<size_t> started_tags() const {
    std::lock_guard lock(mutex_);
    std::vector<size_t> tags;
    for (const auto& run : runs_) tags.insert(tags.end(), run->tags.begin(), run->tags.end());
    return tags;
  }
  // The tags of each pass, in start order.
  std::vector<std::vector<size_t>> passes() const {
    std::lock_guard lock(mutex_);
    std::vector<std::vector<size_t>> tags;
    for (const auto& run : runs_) tags.push_back(run->tags);
    return tags;
  }
  bool overlapped() const {
    std::lock_guard lock(mutex_);
    return overlapped_;
  }

 private:
  struct run_control {
    std::vector<size_t> tags;
    bool ready = false;
    bool throw_on_collect = false;
    size_t polls = 0;  // ready() calls
    std::vector<logits_result> results;
  };

  class controlled_run final : public pending_run {
   public:
    controlled_run(controlled_backend& owner, std::shared_ptr<run_control> control)
        : owner_(owner), control_(std::move(control)) {}
    bool ready() override {
      std::lock_guard lock(owner_.mutex_);
      ++control_->polls;
      owner_.changed_.notify_all();
      return control_->ready || owner_.released_;
    }
    pass_result collect() override {
      std::lock_guard lock(owner_.mutex_);
      owner_.uncollected_ = false;
      if (control_->throw_on_collect) throw std::runtime_error("collect threw");
      double tags = 0;
      for (size_t tag : control_->tags) tags += double(tag);
      pass_result pass{control_->results, {tags, 2 * tags}};
      if (!control_->ready)  // released at the end of a failed test
        pass.requests.assign(control_->tags.size(), failure{500, "never completed"});
      return pass;
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
  bool hold_start_ = false;
  std::atomic<bool> usable_{true};
};

// A request tagged `tag` taking `rows` language rows (one question of that many tokens) and
// `patches` vision patches.
std::shared_ptr<const prepared_request> job(size_t tag, size_t rows = 0, uint32_t patches = 0) {
  auto request = std::make_shared<prepared_request>();
  request->input_tokens = tag;
  if (rows > 0) {
    request->questions.emplace_back();
    request->questions.back().input_ids.assign(rows, 1);
  }
  request->pixels.grid = {1, 1, patches};
  return request;
}

// One letter logit equal to `value`: tells the answers apart.
logits_result logits_of(float value) {
  return std::vector<question_logits>{question_logits{{value}}};
}

// One request a pass, as the executor ran before passes held several.
pass_budget serial_budget() { return {.max_requests = 1}; }

// The executor with the controlled backend, and a future for each submitted job's result.
struct actor_fixture {
  controlled_backend* model = nullptr;  // owned by the actor
  std::atomic<int> unusable_reports{0};
  std::string unusable_reason;
  std::vector<executor_actor::pass_summary> summaries;  // written on the actor's thread
  std::vector<std::unique_ptr<std::promise<run_result>>> promises;
  std::unique_ptr<executor_actor> actor;  // dies first: its completions use the above

  explicit actor_fixture(pass_budget budget = serial_budget(),
                         std::chrono::microseconds batch_wait = {}) {
    auto owned = std::make_unique<controlled_backend>();
    model = owned.get();
    executor_actor::options settings;
    settings.budget = budget;
    settings.batch_wait = batch_wait;
    settings.on_unusable = [this](const std::string& reason) {
      unusable_reason = reason;
      ++unusable_reports;
    };
    settings.on_pass = [this](const executor_actor::pass_summary& pass) {
      summaries.push_back(pass);
    };
    actor = std::make_unique<executor_actor>(std::move(owned), std::move(settings));
  }

  std::future<run_result> submit(size_t tag, start_condition when = {}) {
    return submit(job(tag), std::move(when));
  }

  std::future<run_result> submit(std::shared_ptr<const prepared_request> request,
                                 start_condition when = {}) {
    promises.push_back(std::make_unique<std::promise<run_result>>());
    auto* promise = promises.back().get();
    actor->submit(std::move(request),
                  [promise](run_result result) { promise->set_value(std::move(result)); },
                  std::move(when));
    return promise->get_future();
  }

  // Starts a pass with `first` alone and queues `then` behind it while that pass is in flight:
  // the backend holds the actor in start() until all are submitted, and the actor has found the
  // pass not ready (so that it polls it again only after taking in the submissions) when this
  // returns.
  std::vector<std::future<run_result>> queue_behind_one_pass(
      std::shared_ptr<const prepared_request> first,
      std::vector<std::pair<std::shared_ptr<const prepared_request>, start_condition>> then) {
    std::vector<std::future<run_result>> results;
    model->hold_starts(true);
    results.push_back(submit(std::move(first)));
    model->wait_for_runs(1);
    for (auto& [request, when] : then) results.push_back(submit(request, when));
    model->hold_starts(false);
    model->wait_for_poll(0);
    return results;
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

// Passes of several requests. Each test starts a pass (tag 1) and queues the others behind it
// while it is in flight, so that the passes after it are formed from a known queue.

BOOST_AUTO_TEST_CASE(a_pass_takes_queued_requests_in_order_within_every_budget) {
  actor_fixture f({.max_requests = 3, .max_rows = 100, .max_patches = 50});
  auto results = f.queue_behind_one_pass(job(1, 10, 10), {
      {job(2, 10, 10), {}}, {job(3, 10, 10), {}}, {job(4, 10, 10), {}},  // three: requests
      {job(5, 10, 10), {}}, {job(6, 60, 5), {}},    // 7 would make 120 rows
      {job(7, 50, 5), {}}, {job(8, 10, 30), {}},    // 9 would make 65 patches
      {job(9, 10, 30), {}}, {job(10, 10, 10), {}}});
  const std::vector<std::vector<size_t>> expected{{1}, {2, 3, 4}, {5, 6}, {7, 8}, {9, 10}};
  for (size_t pass = 0; pass < expected.size(); ++pass) {
    f.model->wait_for_runs(pass + 1);
    f.model->complete(pass, logits_of(float(pass)));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    run_result r = results[i].get();
    BOOST_TEST_REQUIRE(r.logits.ok());
    const size_t tag = i + 1;
    size_t pass = 0;
    while (std::find(expected[pass].begin(), expected[pass].end(), tag) == expected[pass].end())
      ++pass;
    BOOST_TEST(r.pass == pass + 1, "tag " << tag);  // passes are numbered from 1
    BOOST_TEST(r.logits->at(0).logits == std::vector<float>{float(pass)});
  }
  BOOST_TEST(f.model->passes() == expected);
  BOOST_TEST(!f.model->overlapped());
  BOOST_TEST_REQUIRE(f.summaries.size() == expected.size());
  BOOST_TEST(f.summaries[2].number == 3u);
  BOOST_TEST(f.summaries[2].requests == 2u);
  BOOST_TEST(f.summaries[2].rows == 70u);
  BOOST_TEST(f.summaries[2].patches == 15u);
  BOOST_TEST(f.summaries[3].patches == 35u);
}

BOOST_AUTO_TEST_CASE(a_request_over_a_budget_runs_alone_and_nothing_skips_it) {
  actor_fixture f({.max_requests = 8, .max_rows = 100, .max_patches = 100});
  auto results = f.queue_behind_one_pass(job(1, 10, 10), {
      {job(2, 10, 10), {}},
      {job(3, 500, 10), {}},   // over the row budget on its own
      {job(4, 10, 10), {}},    // would fit beside 2, but waits behind 3
      {job(5, 10, 400), {}},   // over the patch budget on its own
      {job(6, 10, 10), {}}});
  for (size_t pass = 0; pass < 6; ++pass) {
    f.model->wait_for_runs(pass + 1);
    f.model->complete(pass, logits_of(1.0f));
  }
  for (auto& result : results) BOOST_TEST(result.get().logits.ok());
  BOOST_TEST(f.model->passes() ==
             (std::vector<std::vector<size_t>>{{1}, {2}, {3}, {4}, {5}, {6}}));
}

BOOST_AUTO_TEST_CASE(requests_queued_during_a_pass_form_the_next_one) {
  actor_fixture f({.max_requests = 8});
  auto results = f.queue_behind_one_pass(job(1), {{job(2), {}}, {job(3), {}}, {job(4), {}}});
  BOOST_TEST(f.model->passes() == (std::vector<std::vector<size_t>>{{1}}));  // 1 in flight
  f.model->complete(0, logits_of(1.0f));
  f.model->wait_for_runs(2);
  f.model->complete(1, logits_of(2.0f));
  for (auto& result : results) BOOST_TEST(result.get().logits.ok());
  BOOST_TEST(f.model->passes() == (std::vector<std::vector<size_t>>{{1}, {2, 3, 4}}));
  BOOST_TEST(!f.model->overlapped());  // never a second pass before the first was collected
}

BOOST_AUTO_TEST_CASE(cancelled_and_expired_requests_are_dropped_before_their_pass) {
  actor_fixture f({.max_requests = 2});
  start_condition gone;
  gone.cancelled = std::make_shared<std::atomic<bool>>(false);
  start_condition expired;
  expired.deadline = start_condition::clock::now() - std::chrono::seconds(1);
  auto results = f.queue_behind_one_pass(
      job(1), {{job(2), {}}, {job(3), gone}, {job(4), expired}, {job(5), {}}, {job(6), {}}});
  gone.cancelled->store(true);  // while 3 waits in the queue
  f.model->complete(0, logits_of(1.0f));
  f.model->wait_for_runs(2);
  f.model->complete(1, logits_of(2.0f));
  f.model->wait_for_runs(3);
  f.model->complete(2, logits_of(3.0f));

  run_result cancelled = results[2].get();
  BOOST_TEST_REQUIRE(!cancelled.logits.ok());
  BOOST_TEST(cancelled.logits.error().status == 499);
  BOOST_TEST(cancelled.pass == 0u);  // never ran
  run_result late = results[3].get();
  BOOST_TEST_REQUIRE(!late.logits.ok());
  BOOST_TEST(late.logits.error().status == 503);
  BOOST_TEST(late.seconds.vision == 0.0);
  for (size_t i : {0, 1, 4, 5}) BOOST_TEST(results[i].get().logits.ok());
  // The dropped requests took no room: 2 and 5 filled the second pass.
  BOOST_TEST(f.model->passes() == (std::vector<std::vector<size_t>>{{1}, {2, 5}, {6}}));
}

BOOST_AUTO_TEST_CASE(one_request_failing_leaves_its_pass_mates_answered) {
  actor_fixture f({.max_requests = 8});
  auto results = f.queue_behind_one_pass(job(1), {{job(2), {}}, {job(3), {}}, {job(4), {}}});
  f.model->complete(0, logits_of(1.0f));
  f.model->wait_for_runs(2);
  f.model->complete_each(1, {logits_of(2.0f), failure{500, "non-finite logits"}, logits_of(4.0f)});

  run_result second = results[1].get(), third = results[2].get(), fourth = results[3].get();
  BOOST_TEST_REQUIRE(second.logits.ok());
  BOOST_TEST(second.logits->at(0).logits == std::vector<float>{2.0f});
  BOOST_TEST_REQUIRE(!third.logits.ok());
  BOOST_TEST(third.logits.error().status == 500);
  BOOST_TEST(third.logits.error().detail == "non-finite logits");
  BOOST_TEST_REQUIRE(fourth.logits.ok());
  BOOST_TEST(fourth.logits->at(0).logits == std::vector<float>{4.0f});
  for (const run_result* r : {&second, &third, &fourth}) {
    BOOST_TEST(r->pass == 2u);
    BOOST_TEST(r->seconds.vision == 9.0);  // the pass's seconds: tags 2 + 3 + 4
    BOOST_TEST(r->seconds.language == 18.0);
  }
  BOOST_TEST(f.unusable_reports.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_sticky_failure_fails_the_whole_pass_and_is_reported_once) {
  actor_fixture f({.max_requests = 8});
  auto results = f.queue_behind_one_pass(job(1), {{job(2), {}}, {job(3), {}}});
  f.model->complete(0, logits_of(1.0f));
  f.model->wait_for_runs(2);
  f.model->break_for_good();
  f.model->complete(1, failure{500, "device lost"});
  for (size_t i : {1, 2}) BOOST_TEST(results[i].get().logits.error().detail == "device lost");
  BOOST_TEST(f.unusable_reports.load() == 1);
  BOOST_TEST(f.unusable_reason == "device lost");
}

BOOST_AUTO_TEST_CASE(stop_answers_everything_queued_and_finishes_the_pass_in_flight) {
  actor_fixture f({.max_requests = 2});
  auto results = f.queue_behind_one_pass(job(1), {{job(2), {}}, {job(3), {}}, {job(4), {}}});
  f.model->complete(0, logits_of(1.0f));
  f.model->wait_for_runs(2);  // 2 and 3 in flight, 4 queued

  std::thread stopper([&] { f.actor->stop(); });
  run_result queued = results[3].get();  // answered while the pass is still in flight
  BOOST_TEST_REQUIRE(!queued.logits.ok());
  BOOST_TEST(queued.logits.error().status == 503);
  BOOST_TEST(queued.logits.error().detail == "server is shutting down");
  BOOST_TEST(!is_ready(results[1]));
  f.model->complete(1, logits_of(2.0f));
  stopper.join();
  for (size_t i : {1, 2}) {
    BOOST_TEST_REQUIRE(is_ready(results[i]));
    BOOST_TEST(results[i].get().logits.ok());
  }
  BOOST_TEST(f.model->passes() == (std::vector<std::vector<size_t>>{{1}, {2, 3}}));
}

// --batch-wait-us: a pass that is not full waits (here far longer than the test runs) for more
// requests and starts as soon as it is full; stop() answers the waiting ones at once.
BOOST_AUTO_TEST_CASE(a_batch_wait_holds_a_pass_back_until_it_is_full) {
  actor_fixture f({.max_requests = 3}, std::chrono::minutes(10));
  auto first = f.submit(1);
  auto second = f.submit(2);
  auto third = f.submit(3);  // the pass is full: it starts now
  f.model->wait_for_runs(1);
  BOOST_TEST(f.model->passes() == (std::vector<std::vector<size_t>>{{1, 2, 3}}));
  auto waiting = f.submit(4);  // waits for more, behind the pass in flight and then alone
  f.model->complete(0, logits_of(1.0f));
  for (auto* result : {&first, &second, &third}) BOOST_TEST(result->get().logits.ok());

  f.actor->stop();
  run_result r = waiting.get();
  BOOST_TEST_REQUIRE(!r.logits.ok());
  BOOST_TEST(r.logits.error().status == 503);
  BOOST_TEST(f.model->passes().size() == 1u);
}
