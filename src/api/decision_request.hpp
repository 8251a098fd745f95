// A validated /v1/systemone request: questions ready for prompting, the image still encoded.
#pragma once

#include <string>
#include <vector>

namespace cua_s1 {

// The contract's only model name in requests and the identity string in answers.
inline constexpr const char* request_model_name = "cua-s1-4b-0.2";
inline constexpr const char* model_identity =
    "cua-ai/cua-s1-4b-0.2@16818868b0cc7813808aae4e87b417657046ab79:multimodal";

inline constexpr size_t max_questions = 8;
inline constexpr size_t max_options = 26;
inline constexpr size_t max_name_characters = 256;
inline constexpr size_t max_text_characters = 16384;
inline constexpr size_t max_prompt_tokens = 4096;
inline constexpr size_t max_body_bytes = 8 * 1024 * 1024;  // larger bodies get 413

struct choice_question {
  std::string name;                 // the question's key in `questions`
  std::vector<std::string> keys;    // option keys in criteria order (letters A, B, ...)
  std::vector<std::string> labels;  // option label text, JSON-escaped as it appears in the prompt
  std::string goal;                 // instructions text; empty means no Goal block
};

struct decision_request {
  std::vector<choice_question> questions;  // in request order
  std::string image_data_url;              // state.image, not yet decoded
};

}  // namespace cua_s1
