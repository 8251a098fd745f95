// Request validation as reference protocol.py::parse_request (messages verbatim).
#include "api/request_validation.hpp"

#include <array>
#include <string_view>

#include "api/asset_forms.hpp"
#include "api/python_json.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

constexpr std::array<std::string_view, 4> media_tokens{"<|image_pad|>", "<|video_pad|>",
                                                       "<|vision_start|>", "<|vision_end|>"};

bool name_length_ok(const std::string& text) {
  size_t length = utf8::code_point_count(text);
  return length >= 1 && length <= max_name_characters;
}

// The reference's _text(): a string as is, an object/array as json.dumps, then the length and
// media-token checks. `field` names the field in messages.
outcome<std::string> question_text(const json_value& value, std::string_view field) {
  std::string text;
  if (value.is_string()) {
    text = value.text;
  } else if (value.is_object() || value.is_array()) {
    text = python_json_dumps(value);
  } else {
    return unprocessable(std::string(field) + " must be a string, object or array");
  }
  if (utf8::code_point_count(text) > max_text_characters)
    return unprocessable(std::string(field) + " exceeds 16384 characters");
  for (auto token : media_tokens)
    if (text.find(token) != std::string::npos)
      return unprocessable(std::string(field) + " contains an unsupported media control token");
  return text;
}

outcome<choice_question> validate_question(const json_member& entry) {
  if (!name_length_ok(entry.key))
    return unprocessable("question names must contain 1 to 256 characters");
  const json_value& q = entry.value;
  const json_value* type = q.is_object() ? q.find("type") : nullptr;
  if (!type || !type->is_string() || type->text != "choice")
    return unprocessable("only choice questions are supported");
  for (const auto& field : q.members)
    if (field.key != "type" && field.key != "instructions" && field.key != "criteria")
      return unprocessable("unsupported question fields");
  const json_value* instructions = q.find("instructions");
  if (!instructions) return unprocessable("instructions is required for every question");
  const json_value* criteria = q.find("criteria");
  if (!criteria || !criteria->is_object() || criteria->members.empty() ||
      criteria->members.size() > max_options)
    return unprocessable("choice requires 1 to 26 options");

  choice_question question;
  question.name = entry.key;
  size_t combined = 0;
  for (const auto& option : criteria->members) {
    if (!name_length_ok(option.key))
      return unprocessable("option keys must contain 1 to 256 characters");
    json_value key_as_label;
    const json_value* label = &option.value;
    if (label->is_null()) {
      key_as_label.type = json_value::kind::string;
      key_as_label.text = option.key;
      label = &key_as_label;
    }
    auto text = question_text(*label, "criteria");
    if (!text) return text.error();
    std::string escaped;
    append_json_string_body(escaped, *text);
    combined += utf8::code_point_count(escaped);
    question.keys.push_back(option.key);
    question.labels.push_back(std::move(escaped));
  }
  if (!instructions->is_null()) {
    auto goal = question_text(*instructions, "instructions");
    if (!goal) return goal.error();
    question.goal = std::move(*goal);
  }
  combined += utf8::code_point_count(question.goal);
  if (combined > max_text_characters)
    return unprocessable("combined question text exceeds 16384 characters");
  return question;
}

}  // namespace

outcome<decision_request> validate_request(json_value body, const multipart_form* form) {
  // `assets` is the one extra key (contract.md 1.7), and only with a state that refers to it.
  json_value* assets = body.is_object() ? body.find("assets") : nullptr;
  const size_t keys = assets ? 4 : 3;
  bool shape_ok = body.is_object() && body.members.size() == keys && body.find("model") &&
                  body.find("state") && body.find("questions") &&
                  (!assets || state_refers_to_assets(*body.find("state")));
  if (!shape_ok) return unprocessable("request must contain model, state and questions only");
  const json_value& model = *body.find("model");
  if (!model.is_string() || model.text != request_model_name)
    return unprocessable("model must be cua-s1-4b-0.2");
  const json_value& questions = *body.find("questions");
  if (!questions.is_object() || questions.members.empty() ||
      questions.members.size() > max_questions)
    return unprocessable("questions must contain 1 to 8 questions");

  decision_request request;
  for (const auto& entry : questions.members) {
    auto question = validate_question(entry);
    if (!question) return question.error();
    request.questions.push_back(std::move(*question));
  }

  json_value& state = *body.find("state");
  if (assets) {
    auto image = resolve_asset_image(state, *assets, request.questions, form);
    if (!image) return image.error();
    request.image_data_url = std::move(*image);
    return request;
  }
  if (!state.is_object() || state.members.size() != 1 || state.members[0].key != "image")
    return unprocessable("state must contain exactly one image data URL");
  json_value& image = state.members[0].value;
  if (!image.is_string()) return unprocessable("state.image must be a PNG/JPEG base64 data URL");
  if (auto parts = check_no_unclaimed_parts(form); !parts) return parts.error();
  request.image_data_url = std::move(image.text);
  return request;
}

}  // namespace cua_s1
