// The backend decorator behind CUA_S1_FAULT_INJECTION.
#include "server/fault_injection.hpp"

#include <charconv>
#include <string>

namespace cua_s1 {
namespace {

class sticky_error_backend final : public backend {
 public:
  sticky_error_backend(std::unique_ptr<backend> model, size_t runs)
      : model_(std::move(model)), runs_left_(runs) {}

  outcome<std::vector<question_logits>> run(const prepared_request& request) override {
    if (runs_left_ > 0) {
      --runs_left_;
      return model_->run(request);
    }
    broken_ = true;
    return failure{500, std::string("injected sticky device error (") + fault_injection_variable + ")"};
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
