// Whole requests through request_preparer against the Transformers 5.17 reference inputs, and
// the rejection paths that need the full pipeline.
#define BOOST_TEST_MODULE prepare
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "common/sha256.hpp"
#include "prep/request_preparer.hpp"
#include "prep/shared_prefix.hpp"
#include "test_support.hpp"

using namespace cua_s1;
namespace json = boost::json;

namespace {

const std::string model_dir = std::string(CUA_S1_BINARY_DIR) + "/fixtures/qwen35";

const request_preparer& preparer() {
  static auto loaded = request_preparer::load(model_dir);
  if (!loaded) BOOST_FAIL("cannot load " << model_dir << ": " << loaded.error().detail);
  return *loaded;
}

std::vector<int32_t> ints(const json::value& value) {
  std::vector<int32_t> out;
  for (const auto& v : value.as_array()) out.push_back(static_cast<int32_t>(v.as_int64()));
  return out;
}

std::string request_file(const std::string& name) {
  return test::read_file(test::fixture_path("prepare/requests/" + name + ".json"));
}

void expect_rejection(const std::string& body, int status, const std::string& detail) {
  auto prepared = preparer().prepare(body);
  BOOST_TEST_CONTEXT("body " << body.substr(0, 200)) {
    BOOST_REQUIRE(!prepared.ok());
    BOOST_TEST(prepared.error().status == status);
    BOOST_TEST(prepared.error().detail == detail);
  }
}

// A valid request from the corpus with one edit applied to its JSON text.
std::string edited(const std::string& from, const std::string& to) {
  std::string body = request_file("std-small");
  size_t at = body.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return body.replace(at, from.size(), to);
}

}  // namespace

BOOST_AUTO_TEST_CASE(corpus_matches_the_reference_inputs) {
  auto expected = test::read_json_fixture("prepare/expected.json").as_object();
  BOOST_REQUIRE_GE(expected.size(), 16u);
  for (const auto& [name, record_value] : expected) {
    BOOST_TEST_CONTEXT("request " << name) {
      const auto& record = record_value.as_object();
      auto prepared = preparer().prepare(request_file(std::string(name)));
      if (record.at("status").as_int64() != 200) {
        BOOST_REQUIRE(!prepared.ok());
        BOOST_TEST(prepared.error().detail == std::string(record.at("detail").as_string()));
        continue;
      }
      BOOST_REQUIRE_MESSAGE(prepared.ok(), (prepared ? "" : prepared.error().detail));
      const auto& image = record.at("image").as_object();
      const auto& px = prepared->pixels;
      BOOST_TEST(prepared->image.width == image.at("width").as_int64());
      BOOST_TEST(prepared->image.height == image.at("height").as_int64());
      BOOST_TEST(px.resized.width == image.at("resized_width").as_int64());
      BOOST_TEST(px.resized.height == image.at("resized_height").as_int64());
      auto grid = ints(image.at("grid_thw"));
      BOOST_TEST((std::vector<int32_t>{1, int32_t(px.grid.h), int32_t(px.grid.w)} == grid));
      BOOST_TEST(sha256_hex(prepared->image.pixels.data(), prepared->image.pixels.size()) ==
                 std::string(image.at("rgb_sha256").as_string()));
      BOOST_TEST(sha256_hex(px.pixel_values.data(), px.pixel_values.size() * sizeof(float)) ==
                 std::string(image.at("pixel_values_sha256").as_string()));
      const auto& questions = record.at("questions").as_array();
      BOOST_REQUIRE_EQUAL(prepared->questions.size(), questions.size());
      for (size_t q = 0; q < questions.size(); ++q) {
        const auto& want = questions[q].as_object();
        const auto& got = prepared->questions[q];
        BOOST_TEST(prepared->request.questions[q].name == std::string(want.at("name").as_string()));
        BOOST_TEST(got.input_ids == ints(want.at("input_ids")), boost::test_tools::per_element());
        const auto& axes = want.at("position_ids").as_array();
        for (size_t axis = 0; axis < 3; ++axis)
          BOOST_TEST(got.positions.axes[axis] == ints(axes[axis]), boost::test_tools::per_element());
        BOOST_TEST(got.letter_ids == ints(want.at("letter_ids")), boost::test_tools::per_element());
      }
      BOOST_TEST(prepared->input_tokens == record.at("input_tokens").as_int64());
    }
  }
}

BOOST_AUTO_TEST_CASE(letters_are_single_tokens_32_to_57) {
  auto prepared = preparer().prepare(request_file("std-26-options"));
  BOOST_REQUIRE(prepared.ok());
  const auto& letters = prepared->questions[0].letter_ids;
  BOOST_REQUIRE_EQUAL(letters.size(), 26u);
  for (int i = 0; i < 26; ++i) BOOST_TEST(letters[i] == 32 + i);
}

BOOST_AUTO_TEST_CASE(live_check_invalid_inputs) {
  // spec/contract.md section 3.4, cases 1-8 (case 9, the 413, is an HTTP/CLI body-limit check).
  expect_rejection(R"({"a":1,"a":2})", 400, "duplicate JSON keys are not supported");
  expect_rejection(R"({"x":NaN})", 400, "non-finite JSON numbers are not supported");
  expect_rejection("[]", 400, "request must be a JSON object");
  expect_rejection("{}", 422, "request must contain model, state and questions only");
  std::string body = request_file("std-small");
  size_t url = body.find("data:image/png;base64,");
  size_t end = body.find('"', url);
  expect_rejection(body.substr(0, url) + "https://example.invalid/a.png" + body.substr(end), 422,
                   "only inline PNG/JPEG images are supported");
  expect_rejection(edited("\"instructions\": \"Save the changed display name.\"",
                          "\"instructions\": \"<|image_pad|>\""),
                   422, "instructions contains an unsupported media control token");
  std::string nine;
  for (int i = 0; i < 9; ++i)
    nine += std::string(i ? ", " : "") + "\"" + std::to_string(i) +
            R"(": {"type": "choice", "instructions": null, "criteria": {"a": null}})";
  size_t questions = body.find("\"questions\": ");
  expect_rejection(body.substr(0, questions) + "\"questions\": {" + nine + "}}", 422,
                   "questions must contain 1 to 8 questions");
  expect_rejection(body.substr(0, body.size() - 1) + ", \"extra\": true}", 422,
                   "request must contain model, state and questions only");
}

BOOST_AUTO_TEST_CASE(image_is_checked_after_questions) {
  std::string body = request_file("std-small");
  size_t url = body.find("data:image/png;base64,");
  std::string bad_image = body.substr(0, url) + "data:image/gif;base64,AAAA" +
                          body.substr(body.find('"', url));
  expect_rejection(bad_image, 422, "only inline PNG/JPEG images are supported");
  size_t type = bad_image.find("\"type\": \"choice\"");
  expect_rejection(bad_image.replace(type, 16, "\"type\": \"score\""), 422,
                   "only choice questions are supported");
  std::string truncated = body;
  size_t payload = truncated.find("base64,") + 7;
  truncated.erase(payload + 100, truncated.find('"', payload) - payload - 100);
  expect_rejection(truncated, 422, "invalid image data");
}

BOOST_AUTO_TEST_CASE(prompts_over_4096_tokens_are_rejected) {
  // 1024x1024 -> 1024 image tokens; 3,000 digits tokenize to one token each.
  std::string body = request_file("bnd-maximum");
  size_t at = body.find("Choose a useful next action. Case 0.");
  BOOST_REQUIRE(at != std::string::npos);
  body.replace(at, 36, std::string(3000, '7'));
  expect_rejection(body, 422, "processed prompt exceeds 4096 tokens");
}

BOOST_AUTO_TEST_CASE(model_directory_errors_name_the_file) {
  auto missing = request_preparer::load("/nonexistent/model");
  BOOST_REQUIRE(!missing.ok());
  BOOST_TEST(missing.error().detail.find("/nonexistent/model/config.json") != std::string::npos);
}

// The shared prefix of real prepared requests reaches past the image and stops where the
// questions' token ids first differ; single questions and short prefixes share nothing.
BOOST_AUTO_TEST_CASE(questions_share_the_prompt_up_to_their_first_difference) {
  for (const char* name : {"std-two-questions", "bnd-tiny-eight"}) {
    BOOST_TEST_CONTEXT(name) {
      auto prepared = preparer().prepare(request_file(name));
      BOOST_TEST_REQUIRE(prepared.ok());
      const auto& questions = prepared->questions;
      BOOST_TEST_REQUIRE(questions.size() >= 2u);
      const size_t shared = shared_prefix_tokens(*prepared);
      const prepared_question& first = questions.front();
      size_t image_end = first.image_start;
      while (image_end < first.input_ids.size() && first.input_ids[image_end] == first.input_ids[first.image_start])
        ++image_end;
      BOOST_TEST_MESSAGE(name << ": " << shared << " shared tokens of " << first.input_ids.size()
                              << ", image ends at " << image_end);
      BOOST_TEST(shared > image_end);
      for (const prepared_question& q : questions)
        BOOST_TEST(std::equal(q.input_ids.begin(), q.input_ids.begin() + long(shared),
                              first.input_ids.begin()));
      bool differs = false;
      for (const prepared_question& q : questions)
        differs = differs || q.input_ids.size() == shared + 1 || q.input_ids[shared] != first.input_ids[shared];
      BOOST_TEST(differs);  // the prefix is the longest one
    }
  }
  auto single = preparer().prepare(request_file("std-small"));
  BOOST_TEST_REQUIRE(single.ok());
  BOOST_TEST(shared_prefix_tokens(*single) == 0u);

  // Identical questions: everything but the last token; a prefix under the minimum: nothing.
  prepared_request twins = *single;
  twins.questions.push_back(twins.questions.front());
  BOOST_TEST(shared_prefix_tokens(twins) == twins.questions.front().input_ids.size() - 1);
  prepared_request early = twins;
  early.questions.back().input_ids[min_shared_prefix_tokens - 1] += 1;
  BOOST_TEST(shared_prefix_tokens(early) == 0u);
  prepared_request moved = twins;  // same ids, other positions: not shared from there on
  moved.questions.back().positions.axes[1][min_shared_prefix_tokens + 5] += 1;
  BOOST_TEST(shared_prefix_tokens(moved) == min_shared_prefix_tokens + 5);
  // Rounded down to the alignment, and nothing when that falls under the minimum.
  BOOST_TEST(shared_prefix_tokens(moved, 64) == 64u);
  BOOST_TEST(shared_prefix_tokens(moved, 128) == 0u);
}

// The opening every request shares: the system text before the image of the real template.
BOOST_AUTO_TEST_CASE(common_opening_is_the_text_before_the_image) {
  auto single = preparer().prepare(request_file("std-small"));
  BOOST_TEST_REQUIRE(single.ok());
  const size_t image_start = single->questions.front().image_start;
  BOOST_TEST_REQUIRE(image_start >= 64u);  // the system prompt alone is longer than a GDN chunk
  BOOST_TEST(common_opening_tokens(*single, 64) == 64u);
  BOOST_TEST(common_opening_tokens(*single, image_start) == image_start);
  BOOST_TEST(common_opening_tokens(*single, image_start + 1) == 0u);  // would take an image pad
  BOOST_TEST(common_opening_tokens(*single, 0) == 0u);

  prepared_request twins = *single;
  twins.questions.push_back(twins.questions.front());
  BOOST_TEST(common_opening_tokens(twins, 64) == 64u);
  prepared_request other_text = twins;
  other_text.questions.back().input_ids[63] += 1;
  BOOST_TEST(common_opening_tokens(other_text, 64) == 0u);
  BOOST_TEST(common_opening_tokens(other_text, 63) == 63u);
  prepared_request moved = twins;
  moved.questions.back().positions.axes[2][10] += 1;
  BOOST_TEST(common_opening_tokens(moved, 64) == 0u);
  prepared_request short_prompt = *single;  // no token left after the opening to read out
  short_prompt.questions.front().input_ids.resize(64);
  BOOST_TEST(common_opening_tokens(short_prompt, 64) == 0u);
  BOOST_TEST(common_opening_tokens(prepared_request{}, 64) == 0u);
}

// Suffix batches: in order, at most max_questions each, suffix rows within max_rows, an
// oversized question alone.
BOOST_AUTO_TEST_CASE(suffix_batches_bound_questions_and_rows) {
  prepared_request request;
  for (const size_t length : {110, 150, 130, 400, 120, 105, 101, 102}) {
    prepared_question question;
    question.input_ids.assign(length, 7);
    request.questions.push_back(std::move(question));
  }
  auto spans = [](const std::vector<question_batch>& batches) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const question_batch& b : batches) out.emplace_back(b.first, b.count);
    return out;
  };
  using spans_t = std::vector<std::pair<size_t, size_t>>;
  // shared 100: suffixes 10, 50, 30, 300, 20, 5, 1, 2
  BOOST_TEST((spans(suffix_batches(request, 100, 4096, 8)) == spans_t{{0, 8}}));
  BOOST_TEST((spans(suffix_batches(request, 100, 4096, 3)) == spans_t{{0, 3}, {3, 3}, {6, 2}}));
  BOOST_TEST((spans(suffix_batches(request, 100, 100, 8)) == spans_t{{0, 3}, {3, 1}, {4, 4}}));
  BOOST_TEST((spans(suffix_batches(request, 100, 40, 8)) ==
              spans_t{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 4}}));
  // No shared prefix: whole prompts.
  BOOST_TEST((spans(suffix_batches(request, 0, 500, 8)) == spans_t{{0, 3}, {3, 1}, {4, 4}}));
}
