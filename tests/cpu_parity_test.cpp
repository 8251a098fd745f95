// The CPU backend on the bundled tiny model against its Transformers 5.17 + PEFT 0.21 controls:
// inputs, letter logits and probabilities within 1e-3 / 1e-4 of the fp32 control, per-stage
// relative errors under 1e-3, the contract 12.1 tolerance rule against the bf16 control, and
// bit-identical repeated runs.
#define BOOST_TEST_MODULE cpu_parity
#include "model/cpu/cpu_backend.hpp"
#include "tiny_parity.hpp"

using namespace cua_s1;
namespace parity = cua_s1::test::parity;

namespace {

std::unique_ptr<backend> make_cpu(std::shared_ptr<const model_weights> weights,
                                  stage_probe probe) {
  return make_cpu_backend(std::move(weights), 4, std::move(probe));
}

const parity::tiny_run& run() {
  static const std::unique_ptr<parity::tiny_run> loaded = parity::run_tiny_corpus(make_cpu);
  return *loaded;
}

}  // namespace

BOOST_AUTO_TEST_CASE(inputs_equal_the_reference_inputs) { parity::check_inputs(run()); }

BOOST_AUTO_TEST_CASE(letter_logits_and_probabilities_match_the_fp32_control) {
  parity::check_fp32_logits(run(), 1e-3, 1e-4);
}

BOOST_AUTO_TEST_CASE(stage_errors_against_the_controls) {
  parity::check_all_stages(run(), [](double) { return 1e-3; });
}

BOOST_AUTO_TEST_CASE(tolerance_rule_against_the_bf16_control) {
  parity::check_tolerance_rule(run());
}

// Language re-runs and a vision re-run after language calls are bit-identical.
BOOST_AUTO_TEST_CASE(repeated_runs_are_bit_identical) {
  parity::check_repeated_runs(run(), make_cpu);
}
