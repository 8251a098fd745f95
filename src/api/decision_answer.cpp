// Choice, confidence and response serialization as reference protocol.py::answer.
#include "api/decision_answer.hpp"

#include <algorithm>
#include <cmath>

#include "api/python_json.hpp"

namespace cua_s1 {

outcome<choice_answer> make_choice_answer(const choice_question& question,
                                          std::vector<float> probabilities) {
  const failure inference_failed{500, "inference failed"};
  if (probabilities.size() != question.keys.size() || probabilities.empty())
    return inference_failed;
  double sum = 0;
  for (float p : probabilities) {
    if (!std::isfinite(p) || p < 0.0f || p > 1.0f) return inference_failed;
    sum += static_cast<double>(p);
  }
  // math.isclose(sum, 1.0, abs_tol=1e-5) with its default rel_tol of 1e-9.
  double tolerance = std::max(1e-9 * std::max(std::fabs(sum), 1.0), 1e-5);
  if (std::fabs(sum - 1.0) > tolerance) return inference_failed;

  choice_answer answer;
  for (size_t i = 1; i < probabilities.size(); ++i)
    if (probabilities[i] > probabilities[answer.choice]) answer.choice = i;
  size_t n = probabilities.size();
  if (n == 1) {
    answer.confidence = 1.0;
  } else {
    double plogp = 0;
    for (float p : probabilities)
      if (p > 0.0f) plogp += static_cast<double>(p) * std::log(static_cast<double>(p));
    answer.confidence = std::clamp(1.0 + plogp / std::log(static_cast<double>(n)), 0.0, 1.0);
  }
  answer.probabilities = std::move(probabilities);
  return answer;
}

namespace {

void append_string(std::string& out, const std::string& text) {
  out.push_back('"');
  append_json_string_body(out, text);
  out.push_back('"');
}

}  // namespace

std::string serialize_decision(std::string_view identity,
                               const std::vector<choice_question>& questions,
                               const std::vector<choice_answer>& answers, size_t input_tokens) {
  std::string out = "{\"model\":";
  append_string(out, std::string(identity));
  out += ",\"answers\":{";
  for (size_t q = 0; q < questions.size(); ++q) {
    const auto& question = questions[q];
    const auto& answer = answers[q];
    if (q) out.push_back(',');
    append_string(out, question.name);
    out += ":{\"type\":\"choice\",\"choice\":";
    append_string(out, question.keys[answer.choice]);
    out += ",\"probabilities\":{";
    for (size_t i = 0; i < question.keys.size(); ++i) {
      if (i) out.push_back(',');
      append_string(out, question.keys[i]);
      out.push_back(':');
      out += python_float_repr(static_cast<double>(answer.probabilities[i]));
    }
    out += "},\"confidence\":";
    out += python_float_repr(answer.confidence);
    out.push_back('}');
  }
  out += "},\"usage\":{\"input_tokens\":";
  out += std::to_string(input_tokens);
  out += ",\"output_tokens\":0}}";
  return out;
}

std::string serialize_error(const failure& error) {
  std::string out = "{\"detail\":";
  append_string(out, error.detail);
  out.push_back('}');
  return out;
}

}  // namespace cua_s1
