// The executor actor's mailbox and event poller: submissions queue on its thread, one run is
// started at a time, and a steady_timer polls it until ready.
#include "actors/executor_actor.hpp"

#include <boost/asio/post.hpp>
#include <exception>

#include "common/json_log.hpp"

namespace cua_s1 {

executor_actor::executor_actor(std::unique_ptr<backend> model, unusable_handler on_unusable)
    : model_(std::move(model)), on_unusable_(std::move(on_unusable)) {}

executor_actor::~executor_actor() { stop(); }

void executor_actor::stop() {
  boost::asio::post(thread_, [this] {
    stopping_ = true;
    while (!queue_.empty()) {
      job refused = std::move(queue_.front());
      queue_.pop_front();
      answer_unrun(refused, {503, "server is shutting down"});
    }
  });
  thread_.join();  // returns once the run in flight has been collected
}

void executor_actor::submit(std::shared_ptr<const prepared_request> request, completion done,
                            start_condition when) {
  boost::asio::post(thread_, [this, request = std::move(request), done = std::move(done),
                              when = std::move(when)]() mutable {
    queue_.push_back({std::move(request), std::move(done), std::move(when)});
    if (!in_flight_) start_next();
  });
}

// Answers a job the backend did not run (and spent no time on).
void executor_actor::answer_unrun(job& unrun, failure why) {
  auto done = std::move(unrun.done);
  unrun = {};
  done({std::move(why), {}});
}

void executor_actor::start_next() {
  while (!in_flight_ && !queue_.empty()) {
    current_ = std::move(queue_.front());
    queue_.pop_front();
    if (stopping_) {
      answer_unrun(current_, {503, "server is shutting down"});
      continue;
    }
    if (auto refused = current_.when.refusal("the model could run it")) {
      answer_unrun(current_, *refused);
      continue;
    }
    try {
      in_flight_ = model_->start(*current_.request);
    } catch (const std::exception& e) {
      // Backends report failures as values; an exception here is a bug, never a crash.
      log_event(log_level::error, "backend_exception", {{"what", std::string_view(e.what())}});
      answer_unrun(current_, {500, "inference failed"});
      continue;
    }
    if (in_flight_->ready())
      finish();
    else
      poll();
  }
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

void executor_actor::finish() {
  outcome<std::vector<question_logits>> result = failure{500, "inference failed"};
  try {
    result = in_flight_->collect();
  } catch (const std::exception& e) {
    log_event(log_level::error, "backend_exception", {{"what", std::string_view(e.what())}});
  }
  in_flight_.reset();
  const backend::stage_seconds seconds = model_->last_run_seconds();
  auto done = std::move(current_.done);
  current_ = {};
  if (!model_->usable() && !reported_unusable_) {
    reported_unusable_ = true;
    const std::string reason = result ? std::string("backend unusable") : result.error().detail;
    log_event(log_level::error, "backend_unusable", {{"detail", std::string_view(reason)}});
    if (on_unusable_) on_unusable_(reason);
  }
  done({std::move(result), seconds});
}

}  // namespace cua_s1
