// From letter logits to the response: fp32 softmax, choice, confidence, usage, JSON.
#pragma once

#include <string_view>
#include <vector>

#include "actors/decision_response.hpp"
#include "common/outcome.hpp"
#include "model/backend.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1 {

// Softmax in float32 with max subtraction, as torch.softmax(logits.float()).
std::vector<float> letter_softmax(const std::vector<float>& logits);

// The 200 response for `request`, or 500 "inference failed" when the logits are missing, of
// the wrong count or give invalid probabilities.
decision_response assemble_response(std::string_view identity, const prepared_request& request,
                                    const outcome<std::vector<question_logits>>& logits);

// A response for a failure: its status and {"detail": ...}.
decision_response error_response(const failure& error);

}  // namespace cua_s1
