// Choice, confidence and response serialization with hand-computed expectations.
#define BOOST_TEST_MODULE api_answer
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "api/decision_answer.hpp"
#include "api/python_json.hpp"

using namespace cua_s1;

namespace {

choice_question question(std::vector<std::string> keys) {
  choice_question q;
  q.name = "pick";
  q.keys = std::move(keys);
  q.labels = q.keys;
  return q;
}

}  // namespace

BOOST_AUTO_TEST_CASE(choice_is_the_first_maximum) {
  auto q = question({"a", "b", "c"});
  auto answer = make_choice_answer(q, {0.25f, 0.375f, 0.375f});
  BOOST_REQUIRE(answer.ok());
  BOOST_TEST(answer->choice == 1u);
}

BOOST_AUTO_TEST_CASE(confidence_is_one_minus_normalised_entropy) {
  auto even = make_choice_answer(question({"a", "b"}), {0.5f, 0.5f});
  BOOST_REQUIRE(even.ok());
  BOOST_TEST(even->confidence == 0.0);
  BOOST_TEST(even->choice == 0u);
  auto single = make_choice_answer(question({"only"}), {1.0f});
  BOOST_TEST(single->confidence == 1.0);
  auto certain = make_choice_answer(question({"a", "b", "c"}), {1.0f, 0.0f, 0.0f});
  BOOST_TEST(certain->confidence == 1.0);
  // p = (0.75, 0.25): H = -(0.75 ln 0.75 + 0.25 ln 0.25) = 0.5623351446188083; / ln 2.
  auto skewed = make_choice_answer(question({"a", "b"}), {0.75f, 0.25f});
  BOOST_TEST(std::fabs(skewed->confidence - (1.0 - 0.5623351446188083 / std::log(2.0))) < 1e-15);
}

BOOST_AUTO_TEST_CASE(invalid_probabilities_are_inference_failures) {
  auto q = question({"a", "b"});
  for (std::vector<float> bad : std::vector<std::vector<float>>{
           {0.5f}, {0.5f, 0.6f}, {NAN, 0.5f}, {1.5f, -0.5f}, {INFINITY, 0.0f}, {0.49f, 0.5f}}) {
    auto answer = make_choice_answer(q, bad);
    BOOST_REQUIRE(!answer.ok());
    BOOST_TEST(answer.error().status == 500);
    BOOST_TEST(answer.error().detail == "inference failed");
  }
  BOOST_TEST(make_choice_answer(q, {0.5f, 0.500009f}).ok());  // within 1e-5
}

BOOST_AUTO_TEST_CASE(serialization_keeps_order_and_python_float_spelling) {
  // The first question reproduces the reference text worker's published answer byte for byte
  // (spec/contract.md section 4), apart from the identity suffix.
  auto q1 = question({"delete", "cancel"});
  auto q2 = question({"z\"q", "Ã©"});
  q2.name = "second";
  auto a1 = make_choice_answer(q1, {0.0024726232513785362f, 0.9975274205207825f});
  auto a2 = make_choice_answer(q2, {1e-7f, 1.0f - 1e-7f});
  BOOST_REQUIRE(a1.ok() && a2.ok());
  std::string body = serialize_decision(model_identity, {q1, q2}, {*a1, *a2}, 153);
  const std::string expected =
      "{\"model\":\"cua-ai/cua-s1-4b-0.2@16818868b0cc7813808aae4e87b417657046ab79:multimodal\","
      "\"answers\":{\"pick\":{\"type\":\"choice\",\"choice\":\"cancel\",\"probabilities\":"
      "{\"delete\":0.0024726232513785362,\"cancel\":0.9975274205207825},"
      "\"confidence\":0.9750249565060322},"
      "\"second\":{\"type\":\"choice\",\"choice\":\"Ã©\",\"probabilities\":"
      "{\"z\\\"q\":1.0000000116860974e-07,\"Ã©\":0.9999998807907104},"
      "\"confidence\":" + python_float_repr(a2->confidence) + "}},"
      "\"usage\":{\"input_tokens\":153,\"output_tokens\":0}}";
  BOOST_TEST(body == expected);
  BOOST_TEST(a2->confidence > 0.99999);
}

BOOST_AUTO_TEST_CASE(error_body_is_a_detail_object) {
  BOOST_TEST(serialize_error({422, "bad \"x\""}) == "{\"detail\":\"bad \\\"x\\\"\"}");
}
