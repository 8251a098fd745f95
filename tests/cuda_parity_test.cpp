// The CUDA backend on the bundled tiny model: against its Transformers 5.17 + PEFT 0.21
// controls (the contract 12.1 tolerance rule, our errors next to the bf16 control's, stage by
// stage), against the CPU backend, and bit-identical repeated runs. Skipped, with a message,
// where no CUDA device is present (CI); run on the GPU host.
#define BOOST_TEST_MODULE cuda_parity
#include "cuda_test_support.hpp"
#include "model/cpu/cpu_backend.hpp"
#include "tiny_parity.hpp"

using namespace cua_s1;
namespace parity = cua_s1::test::parity;
namespace utf = boost::unit_test;

using cua_s1::test::cuda_skip_notice;
BOOST_TEST_GLOBAL_FIXTURE(cuda_skip_notice);

namespace {

// CUA_S1_TEST_MERGE_LORA=1 / 0 runs the checks with the language LoRA merged at load / unmerged
// (default: the backend's default, merged).
std::unique_ptr<backend> make_cuda(std::shared_ptr<const model_weights> weights,
                                   stage_probe probe) {
  cuda_backend_options options;
  options.probe = std::move(probe);
  const char* merge = std::getenv("CUA_S1_TEST_MERGE_LORA");
  if (merge && *merge) options.merge_language_lora = std::string(merge) == "1";
  auto made = make_cuda_backend(std::move(weights), std::move(options));
  if (!made) throw std::runtime_error(made.error().detail);
  return std::move(*made);
}

const parity::tiny_run& run() {
  static const std::unique_ptr<parity::tiny_run> loaded = parity::run_tiny_corpus(make_cuda);
  return *loaded;
}

}  // namespace

BOOST_AUTO_TEST_CASE(inputs_equal_the_reference_inputs, *utf::precondition(test::cuda_present)) {
  parity::check_inputs(run());
}

// bf16 GEMM inputs put us near the bf16 control, not at fp32: the goal of issue 4 is to be no
// further from the fp32 control than the bf16 control is.
BOOST_AUTO_TEST_CASE(letter_errors_at_most_the_bf16_controls,
                     *utf::precondition(test::cuda_present)) {
  parity::check_errors_at_most_the_bf16_control(run());
}

// The goal of issue 4: at every stage our error is at most the bf16 control's.
BOOST_AUTO_TEST_CASE(stage_errors_at_most_the_bf16_controls,
                     *utf::precondition(test::cuda_present)) {
  parity::check_all_stages(run(), [](double bf16_error) { return bf16_error; });
}

BOOST_AUTO_TEST_CASE(tolerance_rule_against_the_bf16_control,
                     *utf::precondition(test::cuda_present)) {
  parity::check_tolerance_rule(run());
}

// Whole requests run the questions' shared prefix once: repeatable bit for bit, and within the
// tolerance rule of the fp32 reference question by question.
BOOST_AUTO_TEST_CASE(whole_requests_are_repeatable_and_within_the_rule,
                     *utf::precondition(test::cuda_present)) {
  parity::check_repeated_runs(run(), make_cuda, true);
}

// Whole requests on the GPU and on the CPU backend agree to bf16 rounding.
BOOST_AUTO_TEST_CASE(gpu_agrees_with_the_cpu_backend, *utf::precondition(test::cuda_present)) {
  const parity::tiny_run& m = run();
  auto cpu = make_cpu_backend(m.weights, 4);
  double worst = 0;
  for (const parity::case_result& c : m.cases) {
    auto expected = cpu->run(c.prepared);
    BOOST_REQUIRE(expected);
    for (size_t q = 0; q < c.prepared.questions.size(); ++q) {
      const std::vector<float> ours = letter_softmax(c.logits[q]);
      const std::vector<float> theirs = letter_softmax(expected->at(q).logits);
      for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, double(std::abs(ours[i] - theirs[i])));
    }
  }
  BOOST_TEST_MESSAGE("max |p_cuda - p_cpu| = " << worst);
  BOOST_TEST(worst <= 1e-2);
}
