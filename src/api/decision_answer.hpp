// Turning per-question letter probabilities into the contract's response JSON (section 4).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/decision_request.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

struct choice_answer {
  size_t choice = 0;                // index of the first maximum probability
  std::vector<float> probabilities;  // in criteria order
  double confidence = 0;            // 1 - H(p)/ln(n), clamped to [0,1]; 1.0 when n == 1
};

// Checks the probabilities as the reference does (one per option, finite, in [0,1], sum within
// 1e-5 of 1; otherwise 500 "inference failed") and computes choice and confidence.
outcome<choice_answer> make_choice_answer(const choice_question& question,
                                          std::vector<float> probabilities);

// The response body: {"model":IDENTITY,"answers":{name:{type,choice,probabilities,confidence}},
// "usage":{"input_tokens":N,"output_tokens":0}}, compact, floats in Python repr form.
// `identity` is model_identity for the pinned weights.
std::string serialize_decision(std::string_view identity,
                               const std::vector<choice_question>& questions,
                               const std::vector<choice_answer>& answers, size_t input_tokens);

// The body of every error response: {"detail": "..."}.
std::string serialize_error(const failure& error);

}  // namespace cua_s1
