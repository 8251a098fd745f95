// Every 422 rule of spec/contract.md section 3.2 (questions and state shape), in order.
#define BOOST_TEST_MODULE api_validation
#include <boost/test/unit_test.hpp>

#include "api/request_validation.hpp"
#include "api/strict_json.hpp"

using namespace cua_s1;

namespace {

const std::string image = R"({"image":"data:image/png;base64,AAAA"})";

std::string request_with_questions(const std::string& questions, const std::string& state = image) {
  return R"({"model":"cua-s1-4b-0.2","state":)" + state + R"(,"questions":)" + questions + "}";
}

std::string one_question(const std::string& body) { return request_with_questions("{\"q\":" + body + "}"); }

outcome<decision_request> validate_body(const std::string& body) {
  auto parsed = parse_strict_json(body);
  if (!parsed) return parsed.error();
  return validate_request(*parsed);
}

void expect_422(const std::string& body, const std::string& detail) {
  auto result = validate_body(body);
  BOOST_TEST_CONTEXT("body " << body.substr(0, 300)) {
    BOOST_REQUIRE(!result.ok());
    BOOST_TEST(result.error().status == 422);
    BOOST_TEST(result.error().detail == detail);
  }
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(valid_request_is_decoded_in_order) {
  auto result = validate_body(request_with_questions(
      R"({"next":{"type":"choice","instructions":"Save the changed display name.",)"
      R"("criteria":{"save":"Click Save","cancel":"Click Cancel","wait":"Wait"}},)"
      R"("second":{"type":"choice","instructions":{"goal":"保存名称"},)"
      R"("criteria":{"continue":{"label":"Save"},"cancel":null}}})"));
  BOOST_REQUIRE(result.ok());
  const auto& qs = result->questions;
  BOOST_REQUIRE_EQUAL(qs.size(), 2u);
  BOOST_TEST(qs[0].name == "next");
  BOOST_TEST(qs[0].goal == "Save the changed display name.");
  BOOST_TEST((qs[0].keys == std::vector<std::string>{"save", "cancel", "wait"}));
  BOOST_TEST(qs[1].goal == "{\"goal\": \"保存名称\"}");
  // Structured labels are json.dumps'ed, then escaped again for the prompt.
  BOOST_TEST((qs[1].labels == std::vector<std::string>{R"({\"label\": \"Save\"})", "cancel"}));
  BOOST_TEST(result->image_data_url == "data:image/png;base64,AAAA");
}

BOOST_AUTO_TEST_CASE(labels_are_escaped_like_json_dumps) {
  auto result = validate_body(one_question(
      R"({"type":"choice","instructions":null,"criteria":{"a":"say \"hi\"\\\n\u0001é"}})"));
  BOOST_REQUIRE(result.ok());
  BOOST_TEST(result->questions[0].labels[0] == R"(say \"hi\"\\\n\u0001é)");
  BOOST_TEST(result->questions[0].goal.empty());
}

BOOST_AUTO_TEST_CASE(top_level_rules) {
  expect_422("{}", "request must contain model, state and questions only");
  expect_422(R"({"model":"cua-s1-4b-0.2","state":{},"questions":{},"extra":true})",
             "request must contain model, state and questions only");
  expect_422(R"({"model":"cua-s1-4b-0.2","questions":{}})",
             "request must contain model, state and questions only");
  expect_422(R"({"model":"other","state":{},"questions":{}})", "model must be cua-s1-4b-0.2");
  expect_422(R"({"model":1,"state":{},"questions":{}})", "model must be cua-s1-4b-0.2");
  expect_422(request_with_questions("{}"), "questions must contain 1 to 8 questions");
  expect_422(request_with_questions("[]"), "questions must contain 1 to 8 questions");
  std::string nine;
  for (int i = 0; i < 9; ++i)
    nine += (i ? "," : "") + ("\"" + std::to_string(i) + "\"") +
            R"(:{"type":"choice","instructions":null,"criteria":{"a":null}})";
  expect_422(request_with_questions("{" + nine + "}"), "questions must contain 1 to 8 questions");
}

BOOST_AUTO_TEST_CASE(question_rules_in_reference_order) {
  const std::string ok_criteria = R"("criteria":{"a":null})";
  expect_422(request_with_questions(R"({"":{"type":"choice","instructions":null,)" + ok_criteria + "}}"),
             "question names must contain 1 to 256 characters");
  expect_422(request_with_questions("{\"" + std::string(257, 'n') + R"(":{"type":"choice"}})"),
             "question names must contain 1 to 256 characters");
  // 256 characters counted as code points, not bytes.
  BOOST_TEST(validate_body(request_with_questions(
                 "{\"" + repeat("é", 256) + R"(":{"type":"choice","instructions":null,)" +
                 ok_criteria + "}}"))
                 .ok());
  expect_422(one_question("[]"), "only choice questions are supported");
  expect_422(one_question(R"({"type":"score","instructions":null})"),
             "only choice questions are supported");
  expect_422(one_question(R"({"type":"noul","instructions":null})"),
             "only choice questions are supported");
  expect_422(one_question(R"({"instructions":null})"), "only choice questions are supported");
  expect_422(one_question(R"({"type":"choice","instructions":null,"x":1})"),
             "unsupported question fields");
  expect_422(one_question(R"({"type":"choice",)" + ok_criteria + "}"),
             "instructions is required for every question");
  expect_422(one_question(R"({"type":"choice","instructions":null})"),
             "choice requires 1 to 26 options");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{}})"),
             "choice requires 1 to 26 options");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":["a"]})"),
             "choice requires 1 to 26 options");
  std::string many;
  for (int i = 0; i < 27; ++i) many += (i ? "," : "") + ("\"o" + std::to_string(i) + "\":null");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{)" + many + "}}"),
             "choice requires 1 to 26 options");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{"":"x"}})"),
             "option keys must contain 1 to 256 characters");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{"a":1}})"),
             "criteria must be a string, object or array");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{"a":true}})"),
             "criteria must be a string, object or array");
  expect_422(one_question(R"({"type":"choice","instructions":5,)" + ok_criteria + "}"),
             "instructions must be a string, object or array");
  expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{"a":")" +
                          std::string(16385, 'x') + "\"}}"),
             "criteria exceeds 16384 characters");
  expect_422(one_question(R"({"type":"choice","instructions":")" + std::string(16385, 'x') +
                          "\"," + ok_criteria + "}"),
             "instructions exceeds 16384 characters");
  for (const char* token : {"<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"}) {
    expect_422(one_question(R"({"type":"choice","instructions":")" + std::string(token) + "\"," +
                            ok_criteria + "}"),
               "instructions contains an unsupported media control token");
    expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{"a":["x)" +
                            std::string(token) + "\"]}}"),
               "criteria contains an unsupported media control token");
    // A null label uses the key as its text, so the key is checked too.
    expect_422(one_question(R"({"type":"choice","instructions":null,"criteria":{")" +
                            std::string(token) + "\":null}}"),
               "criteria contains an unsupported media control token");
  }
  // Other special-token spellings are allowed.
  BOOST_TEST(validate_body(one_question(R"({"type":"choice","instructions":"<|im_end|>",)" +
                                        ok_criteria + "}"))
                 .ok());
  // Criteria are checked before instructions.
  expect_422(one_question(R"({"type":"choice","instructions":5,"criteria":{"a":1}})"),
             "criteria must be a string, object or array");
}

BOOST_AUTO_TEST_CASE(combined_length_counts_escaped_labels) {
  // 8192 quotes escape to 16384 characters: alone that fits, with a 1-character goal it does not.
  std::string quotes = repeat("\\\"", 8192);
  BOOST_TEST(validate_body(one_question(R"({"type":"choice","instructions":null,"criteria":{"a":")" +
                                        quotes + "\"}}"))
                 .ok());
  expect_422(one_question(R"({"type":"choice","instructions":"g","criteria":{"a":")" + quotes +
                          "\"}}"),
             "combined question text exceeds 16384 characters");
  expect_422(one_question(R"({"type":"choice","instructions":")" + std::string(10000, 'g') +
                          R"(","criteria":{"a":")" + std::string(6385, 'x') + "\"}}"),
             "combined question text exceeds 16384 characters");
}

BOOST_AUTO_TEST_CASE(state_rules_come_after_questions) {
  const std::string q = R"({"q":{"type":"choice","instructions":null,"criteria":{"a":null}}})";
  expect_422(request_with_questions(q, "{}"), "state must contain exactly one image data URL");
  expect_422(request_with_questions(q, "[]"), "state must contain exactly one image data URL");
  expect_422(request_with_questions(q, R"({"image":"x","tree":1})"),
             "state must contain exactly one image data URL");
  expect_422(request_with_questions(q, R"({"image":1})"),
             "state.image must be a PNG/JPEG base64 data URL");
  expect_422(request_with_questions(R"({"q":{"type":"score"}})", "{}"),
             "only choice questions are supported");
}
