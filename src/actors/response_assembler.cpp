// Response assembly after the model ran.
#include "actors/response_assembler.hpp"

#include <algorithm>
#include <cmath>

#include "api/decision_answer.hpp"

namespace cua_s1 {

std::vector<float> letter_softmax(const std::vector<float>& logits) {
  std::vector<float> p(logits.size());
  if (logits.empty()) return p;
  const float highest = *std::max_element(logits.begin(), logits.end());
  float sum = 0.0f;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp(logits[i] - highest);
    sum += p[i];
  }
  for (float& v : p) v /= sum;
  return p;
}

decision_response error_response(const failure& error) {
  return {error.status, serialize_error(error)};
}

decision_response assemble_response(std::string_view identity, const prepared_request& request,
                                    const outcome<std::vector<question_logits>>& logits) {
  const failure inference_failed{500, "inference failed"};
  if (!logits) return error_response(inference_failed);
  const auto& questions = request.request.questions;
  if (logits->size() != questions.size()) return error_response(inference_failed);
  std::vector<choice_answer> answers;
  answers.reserve(questions.size());
  for (size_t q = 0; q < questions.size(); ++q) {
    const auto& values = (*logits)[q].logits;
    for (float v : values)
      if (!std::isfinite(v)) return error_response(inference_failed);
    auto answer = make_choice_answer(questions[q], letter_softmax(values));
    if (!answer) return error_response(answer.error());
    answers.push_back(std::move(*answer));
  }
  return {200, serialize_decision(identity, questions, answers, request.input_tokens)};
}

}  // namespace cua_s1
