// The executor actor's mailbox, pass formation and event poller: submissions queue on its
// thread, a pass is formed from the front of the queue when none is in flight, and a
// steady_timer polls it until ready.
#include "actors/executor_actor.hpp"

#include <boost/asio/post.hpp>
#include <exception>

#include "common/json_log.hpp"

namespace cua_s1 {

executor_actor::executor_actor(std::unique_ptr<backend> model, options settings)
    : model_(std::move(model)), options_(std::move(settings)) {}

executor_actor::~executor_actor() { stop(); }

void executor_actor::stop() {
  boost::asio::post(thread_, [this] {
    stopping_ = true;
    cancel_wait();
    while (!queue_.empty()) {
      job refused = std::move(queue_.front());
      queue_.pop_front();
      answer_unrun(refused, {503, "server is shutting down"});
    }
  });
  thread_.join();  // returns once the pass in flight has been collected
}

void executor_actor::submit(std::shared_ptr<const prepared_request> request, completion done,
                            start_condition when) {
  const pass_share share = share_of(*request);  // on the caller's thread, off the actor's
  boost::asio::post(thread_, [this, request = std::move(request), done = std::move(done),
                              when = std::move(when), share]() mutable {
    queue_.push_back({std::move(request), std::move(done), std::move(when), share, clock::now()});
    if (waiting_ && fills_a_pass()) cancel_wait();  // full: no reason to wait any longer
    start_next();
  });
}

// Answers a job the backend did not run (and spent no time on).
void executor_actor::answer_unrun(job& unrun, failure why) {
  auto done = std::move(unrun.done);
  unrun = {};
  done({std::move(why), {}, 0});
}

// Why a queued job must not run now, if it must not.
std::optional<failure> executor_actor::refusal(const job& queued) const {
  if (stopping_) return failure{503, "server is shutting down"};
  return queued.when.refusal("the model could run it");
}

// Starts passes while the backend is free and there is work worth starting now.
void executor_actor::start_next() {
  while (!in_flight_ && !waiting_ && !queue_.empty()) {
    if (worth_waiting()) return wait_for_more();
    current_ = take_pass();
    if (!current_.empty()) launch();
  }
}

// With --batch-wait-us: the front request has waited less than that and the queue does not
// fill a pass yet.
bool executor_actor::worth_waiting() const {
  if (options_.batch_wait.count() <= 0 || stopping_) return false;
  return clock::now() < queue_.front().queued + options_.batch_wait && !fills_a_pass();
}

// Whether the queue holds more than a pass takes (refusals aside).
bool executor_actor::fills_a_pass() const {
  pass_load load;
  for (const job& queued : queue_) {
    if (!load.admits(queued.share, options_.budget)) return true;
    load.add(queued.share);
  }
  return load.requests >= options_.budget.max_requests;
}

// Holds the next pass back until the front request has waited batch_wait (or the queue fills a
// pass, or stop()).
void executor_actor::wait_for_more() {
  waiting_ = true;
  const uint64_t generation = ++wait_generation_;
  wait_timer_.expires_at(queue_.front().queued + options_.batch_wait);
  wait_timer_.async_wait([this, generation](const boost::system::error_code& error) {
    if (error || generation != wait_generation_) return;  // cancelled, or a later wait's turn
    waiting_ = false;
    start_next();
  });
}

void executor_actor::cancel_wait() {
  if (!waiting_) return;
  waiting_ = false;
  ++wait_generation_;
  wait_timer_.cancel();
}

// The next pass: jobs from the front of the queue while they fit the budget, stopping at the
// first that does not. A job refused (deadline, client gone, shutdown) is answered on the way
// and takes no room. The first job always fits, however large.
std::vector<executor_actor::job> executor_actor::take_pass() {
  std::vector<job> pass;
  pass_load load;
  while (!queue_.empty()) {
    job& front = queue_.front();
    if (auto refused = refusal(front)) {
      answer_unrun(front, *refused);
      queue_.pop_front();
      continue;
    }
    if (!load.admits(front.share, options_.budget)) break;
    load.add(front.share);
    pass.push_back(std::move(front));
    queue_.pop_front();
  }
  return pass;
}

// Starts current_ as one pass on the backend.
void executor_actor::launch() {
  pass_summary summary{++passes_, current_.size(), 0, 0};
  std::vector<const prepared_request*> requests;
  requests.reserve(current_.size());
  for (const job& member : current_) {
    requests.push_back(member.request.get());
    summary.rows += member.share.rows;
    summary.patches += member.share.patches;
  }
  if (options_.on_pass) options_.on_pass(summary);
  try {
    in_flight_ = model_->start(requests);
  } catch (const std::exception& e) {
    // Backends report failures as values; an exception here is a bug, never a crash.
    log_event(log_level::error, "backend_exception", {{"what", std::string_view(e.what())}});
    for (job& member : current_) {
      auto done = std::move(member.done);
      done({failure{500, "inference failed"}, {}, summary.number});
    }
    current_.clear();
    return;
  }
  if (in_flight_->ready())
    finish();
  else
    poll();
}

void executor_actor::poll() {
  poll_timer_.expires_after(poll_interval);
  poll_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    if (!in_flight_->ready()) return poll();
    finish();
    start_next();
  });
}

// Collects the pass in flight and answers each of its jobs with its own outcome.
void executor_actor::finish() {
  const size_t size = current_.size();
  pass_result pass;
  try {
    pass = in_flight_->collect();
    if (pass.requests.size() != size) {
      log_event(log_level::error, "backend_exception",
                {{"what", "a pass answered " + std::to_string(pass.requests.size()) + " of " +
                              std::to_string(size) + " requests"}});
      pass.requests.clear();
    }
  } catch (const std::exception& e) {
    log_event(log_level::error, "backend_exception", {{"what", std::string_view(e.what())}});
    pass.requests.clear();
  }
  if (pass.requests.size() != size) pass.requests.assign(size, failure{500, "inference failed"});
  in_flight_.reset();
  std::vector<job> members = std::move(current_);
  current_.clear();
  if (!model_->usable() && !reported_unusable_) {
    reported_unusable_ = true;
    std::string reason = "backend unusable";
    for (const request_logits& outcome : pass.requests)
      if (!outcome) {
        reason = outcome.error().detail;  // the failure that made it unusable
        break;
      }
    log_event(log_level::error, "backend_unusable", {{"detail", std::string_view(reason)}});
    if (options_.on_unusable) options_.on_unusable(reason);
  }
  for (size_t i = 0; i < size; ++i) {
    auto done = std::move(members[i].done);
    done({std::move(pass.requests[i]), pass.seconds, passes_});
  }
}

}  // namespace cua_s1
