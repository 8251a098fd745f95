// cpu_backend: vision once per request, one language prefill per question, stage timings.
#include "model/cpu/cpu_backend.hpp"

#include <chrono>
#include <exception>
#include <string>

#include "model/cpu/gemm.hpp"
#include "model/cpu/language_model.hpp"
#include "model/cpu/vision_encoder.hpp"

namespace cua_s1 {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

class cpu_backend final : public backend {
 public:
  cpu_backend(std::shared_ptr<const model_weights> weights, unsigned threads,
              stage_probe probe)
      : weights_(std::move(weights)),
        threads_(std::max(1u, threads)),
        probe_(std::move(probe)),
        vision_(*weights_, threads_),
        language_(*weights_, threads_) {
    cpu::set_blas_threads(threads_);
  }

  outcome<std::vector<question_logits>> run(const prepared_request& request) override {
    last_ = {};
    try {
      const auto vision_start = clock_type::now();
      const std::vector<float> features = vision_.encode(request.pixels, probe());
      last_.vision = seconds_since(vision_start);
      const auto language_start = clock_type::now();
      std::vector<question_logits> answers;
      answers.reserve(request.questions.size());
      for (const prepared_question& question : request.questions)
        answers.push_back({language_.letter_logits(question, features, probe())});
      last_.language = seconds_since(language_start);
      return answers;
    } catch (const std::exception& error) {
      return failure{500, std::string("cpu backend: ") + error.what()};
    }
  }

  std::string description() const override {
    return "cpu (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)");
  }

  stage_seconds last_run_seconds() const override { return last_; }

 private:
  const stage_probe* probe() const { return probe_ ? &probe_ : nullptr; }

  std::shared_ptr<const model_weights> weights_;
  unsigned threads_;
  stage_probe probe_;
  cpu::vision_encoder vision_;
  cpu::language_model language_;
  stage_seconds last_;
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend(std::shared_ptr<const model_weights> weights,
                                          unsigned threads) {
  return make_cpu_backend(std::move(weights), threads, {});
}

std::unique_ptr<backend> make_cpu_backend(std::shared_ptr<const model_weights> weights,
                                          unsigned threads, stage_probe probe) {
  return std::make_unique<cpu_backend>(std::move(weights), threads, std::move(probe));
}

}  // namespace cua_s1
