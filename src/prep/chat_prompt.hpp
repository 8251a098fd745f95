// The chat rendering of one question (spec/contract.md section 5), split around the image pads.
#pragma once

#include <string>

#include "api/decision_request.hpp"

namespace cua_s1 {

inline constexpr const char* system_prompt =
    "You are a one-pass computer-use decision model. You are shown the current state of a screen "
    "and a fixed, closed list of candidate (element, action) options, each given a single letter. "
    "Choose exactly one option: the single best next action to take. Answer with ONLY that "
    "option's letter -- no words, no punctuation, no explanation.";

// The user text T: optional Goal block, fixed app lines, the lettered options.
std::string user_text(const choice_question& question);

// Everything before the image pads, ending with <|vision_start|>; the same for every question.
std::string prompt_head();

// Everything after the image pads, from <|vision_end|> to the closing "<think>\n".
std::string prompt_tail(const choice_question& question);

// The whole rendered prompt with `image_tokens` copies of <|image_pad|> (for tests and tools).
std::string render_prompt(const choice_question& question, size_t image_tokens);

}  // namespace cua_s1
