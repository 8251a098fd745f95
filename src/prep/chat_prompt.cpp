// Chat rendering identical to the Qwen3.5 template with add_generation_prompt=True.
#include "prep/chat_prompt.hpp"

namespace cua_s1 {

std::string user_text(const choice_question& question) {
  std::string text;
  if (!question.goal.empty()) text += "Goal: " + question.goal + "\n\n";
  text += "App: Cua Driver\nTask family: closed-candidate decision\n\n";
  text += "The current screenshot is attached.\n\n";
  text += "Options:\n";
  for (size_t i = 0; i < question.labels.size(); ++i) {
    if (i) text.push_back('\n');
    text.push_back(static_cast<char>('A' + i));
    text += ". Decision \"" + question.labels[i] + "\" -> select";
  }
  text += "\n\nAnswer with a single letter.";
  return text;
}

std::string prompt_head() {
  return std::string("<|im_start|>system\n") + system_prompt +
         "<|im_end|>\n<|im_start|>user\n<|vision_start|>";
}

std::string prompt_tail(const choice_question& question) {
  return "<|vision_end|>" + user_text(question) + "<|im_end|>\n<|im_start|>assistant\n<think>\n";
}

std::string render_prompt(const choice_question& question, size_t image_tokens) {
  std::string text = prompt_head();
  for (size_t i = 0; i < image_tokens; ++i) text += "<|image_pad|>";
  return text + prompt_tail(question);
}

}  // namespace cua_s1
