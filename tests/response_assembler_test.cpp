// Softmax and response assembly after the model: values, order and the 500 paths.
#define BOOST_TEST_MODULE response_assembler
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "actors/response_assembler.hpp"

using namespace cua_s1;

namespace {

prepared_request request_with(std::vector<std::vector<std::string>> option_sets) {
  prepared_request request;
  for (size_t q = 0; q < option_sets.size(); ++q) {
    choice_question question;
    question.name = "q" + std::to_string(q);
    question.keys = option_sets[q];
    question.labels = option_sets[q];
    request.request.questions.push_back(question);
  }
  request.input_tokens = 300;
  return request;
}

}  // namespace

BOOST_AUTO_TEST_CASE(softmax_is_shift_invariant_and_normalised) {
  auto p = letter_softmax({0.0f, std::log(3.0f)});
  BOOST_TEST(p[0] == 0.25f, boost::test_tools::tolerance(1e-7f));
  BOOST_TEST(p[1] == 0.75f, boost::test_tools::tolerance(1e-7f));
  auto shifted = letter_softmax({1000.0f, 1000.0f + std::log(3.0f)});
  BOOST_TEST(shifted[1] == 0.75f, boost::test_tools::tolerance(1e-4f));
  BOOST_TEST(letter_softmax({-1e30f, 0.0f})[1] == 1.0f);
}

BOOST_AUTO_TEST_CASE(answers_follow_question_and_option_order) {
  auto request = request_with({{"save", "cancel", "wait"}, {"only"}});
  std::vector<question_logits> logits{{{0.0f, 2.0f, 1.0f}}, {{5.0f}}};
  auto response = assemble_response("identity", request, logits);
  BOOST_TEST(response.status == 200);
  const std::string& body = response.body;
  BOOST_TEST(body.find("{\"model\":\"identity\",\"answers\":{\"q0\":{\"type\":\"choice\",\"choice\":"
                       "\"cancel\",\"probabilities\":{\"save\":") == 0u);
  BOOST_TEST(body.find("\"q1\":{\"type\":\"choice\",\"choice\":\"only\",\"probabilities\":"
                       "{\"only\":1.0},\"confidence\":1.0}") != std::string::npos);
  BOOST_TEST(body.find("\"usage\":{\"input_tokens\":300,\"output_tokens\":0}") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(model_failures_become_inference_failed) {
  auto request = request_with({{"a", "b"}});
  const std::string inference_failed = "{\"detail\":\"inference failed\"}";
  auto failed = assemble_response("id", request, failure{500, "device error"});
  BOOST_TEST(failed.status == 500);
  BOOST_TEST(failed.body == inference_failed);
  std::vector<question_logits> nan_logits{{{NAN, 0.0f}}};
  BOOST_TEST(assemble_response("id", request, nan_logits).body == inference_failed);
  std::vector<question_logits> wrong_count{{{0.0f, 1.0f, 2.0f}}};
  BOOST_TEST(assemble_response("id", request, wrong_count).status == 500);
  std::vector<question_logits> missing_question{};
  BOOST_TEST(assemble_response("id", request, missing_question).status == 500);
}
