// The executor actor's mailbox: a one-thread pool runs submissions in order.
#include "actors/executor_actor.hpp"

#include <boost/asio/post.hpp>
#include <exception>

#include "common/json_log.hpp"

namespace cua_s1 {

executor_actor::executor_actor(std::unique_ptr<backend> model) : model_(std::move(model)) {}

executor_actor::~executor_actor() { thread_.join(); }

void executor_actor::submit(std::shared_ptr<const prepared_request> request, completion done) {
  boost::asio::post(thread_, [this, request = std::move(request), done = std::move(done)] {
    outcome<std::vector<question_logits>> result = failure{500, "inference failed"};
    try {
      result = model_->run(*request);
    } catch (const std::exception& e) {
      // Backends report failures as values; an exception here is a bug, never a crash.
      log_event(log_level::error, "backend_exception", {{"what", std::string_view(e.what())}});
    }
    done(std::move(result));
  });
}

}  // namespace cua_s1
