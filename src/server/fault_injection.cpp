// The backend decorator behind CUA_S1_FAULT_INJECTION.
#include "server/fault_injection.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace cua_s1 {
namespace {

failure injected_error() {
  return failure{500, std::string("injected sticky device error (") + fault_injection_variable + ")"};
}

// A pass whose first requests the wrapped backend runs; the rest get the injected error.
class partly_failed_run final : public pending_run {
 public:
  partly_failed_run(std::unique_ptr<pending_run> head, size_t failed)
      : head_(std::move(head)), failed_(failed) {}
  bool ready() override { return !head_ || head_->ready(); }
  pass_result collect() override {
    pass_result pass = head_ ? head_->collect() : pass_result{};
    pass.requests.insert(pass.requests.end(), failed_, injected_error());
    return pass;
  }

 private:
  std::unique_ptr<pending_run> head_;
  size_t failed_;
};

// Counts requests, not passes: the first `runs` requests are answered like `model`, every later
// one fails and the backend turns unusable.
class sticky_error_backend final : public backend {
 public:
  sticky_error_backend(std::unique_ptr<backend> model, size_t runs)
      : model_(std::move(model)), runs_left_(runs) {}

  request_logits run(const prepared_request& request) override {
    if (runs_left_ > 0) {
      --runs_left_;
      return model_->run(request);
    }
    broken_ = true;
    return injected_error();
  }
  std::unique_ptr<pending_run> start(request_batch requests) override {
    const size_t answered = std::min(runs_left_, requests.size());
    runs_left_ -= answered;
    if (answered < requests.size()) broken_ = true;
    std::unique_ptr<pending_run> head;
    if (answered > 0) head = model_->start(requests.first(answered));
    return std::make_unique<partly_failed_run>(std::move(head), requests.size() - answered);
  }
  bool usable() const override { return !broken_ && model_->usable(); }
  std::string description() const override { return model_->description() + ", fault injection"; }
  stage_seconds last_run_seconds() const override { return model_->last_run_seconds(); }
  pixel_values_on pixel_values_made() const override { return model_->pixel_values_made(); }

 private:
  std::unique_ptr<backend> model_;
  size_t runs_left_;
  bool broken_ = false;
};

}  // namespace

outcome<size_t> parse_fault_injection(std::string_view spec) {
  constexpr std::string_view prefix = "sticky-error-after:";
  size_t runs = 0;
  const std::string_view count = spec.substr(std::min(spec.size(), prefix.size()));
  const auto parsed = std::from_chars(count.data(), count.data() + count.size(), runs);
  if (!spec.starts_with(prefix) || count.empty() || parsed.ec != std::errc() ||
      parsed.ptr != count.data() + count.size() || runs == 0)
    return failure{400, std::string(fault_injection_variable) +
                            " must be sticky-error-after:N with N >= 1, got \"" + std::string(spec) + "\""};
  return runs;
}

std::unique_ptr<backend> sticky_error_after(std::unique_ptr<backend> model, size_t runs) {
  return std::make_unique<sticky_error_backend>(std::move(model), runs);
}

}  // namespace cua_s1
