// The default backend::start: the requests run one after another, wrapped as a finished pass.
#include "model/backend.hpp"

namespace cua_s1 {
namespace {

class finished_run final : public pending_run {
 public:
  explicit finished_run(pass_result result) : result_(std::move(result)) {}
  bool ready() override { return true; }
  pass_result collect() override { return std::move(result_); }

 private:
  pass_result result_;
};

}  // namespace

std::unique_ptr<pending_run> backend::start(request_batch requests) {
  pass_result pass;
  pass.requests.reserve(requests.size());
  for (const prepared_request* request : requests) {
    pass.requests.push_back(run(*request));
    const stage_seconds seconds = last_run_seconds();
    pass.seconds.vision += seconds.vision;
    pass.seconds.language += seconds.language;
  }
  return std::make_unique<finished_run>(std::move(pass));
}

}  // namespace cua_s1
