// language_packs: which requests of a pass share one packed language pass (prep/request_packs.hpp).
#define BOOST_TEST_MODULE prep_request_packs
#include <boost/test/unit_test.hpp>

#include <vector>

#include "prep/request_packs.hpp"
#include "prep/shared_prefix.hpp"

using namespace cua_s1;

namespace {

constexpr size_t opening = 64;

// A question of `length` positions: the opening (ids 1..64, positions 0..63), then `first_id`
// and ids after it; positions count on from the opening on every axis.
prepared_question question(size_t length, int32_t first_id = 500) {
  prepared_question q;
  for (size_t i = 0; i < length; ++i)
    q.input_ids.push_back(i < opening ? int32_t(i + 1) : first_id + int32_t(i - opening));
  for (auto& axis : q.positions.axes)
    for (size_t i = 0; i < length; ++i) axis.push_back(int64_t(i));
  q.letter_ids = {10, 11};
  q.image_start = opening + 1;
  return q;
}

// One question of `length` positions.
prepared_request single(size_t length) {
  prepared_request r;
  r.questions.push_back(question(length));
  return r;
}

// Questions that share `shared` positions (the opening included), `length` positions each.
prepared_request sharing(size_t questions, size_t length, size_t shared) {
  prepared_request r;
  for (size_t i = 0; i < questions; ++i) {
    prepared_question q = question(length);
    q.input_ids[shared] = int32_t(1000 + i);
    r.questions.push_back(q);
  }
  return r;
}

std::vector<request_pack> packs_of(const std::vector<prepared_request>& requests, size_t max_runs,
                                   size_t max_rows, size_t from = opening) {
  std::vector<const prepared_request*> batch;
  for (const prepared_request& r : requests) batch.push_back(&r);
  return language_packs(batch, from, 64, max_runs, max_rows);
}

}  // namespace

BOOST_AUTO_TEST_CASE(requests_fill_packs_in_order_up_to_the_run_limit) {
  const std::vector<prepared_request> requests(5, single(200));
  const std::vector<request_pack> expected = {{0, 1, 2}, {3, 4}};
  BOOST_TEST(packs_of(requests, 3, 100000) == expected);
}

BOOST_AUTO_TEST_CASE(the_row_budget_counts_positions_after_the_opening) {
  // 136 rows each after the opening: two fit 300, three do not.
  const std::vector<prepared_request> requests(3, single(200));
  const std::vector<request_pack> two = {{0, 1}, {2}};
  BOOST_TEST(packs_of(requests, 8, 300) == two);
  const std::vector<request_pack> all = {{0, 1, 2}};
  BOOST_TEST(packs_of(requests, 8, 408) == all);
  // From the prompt's start (no kept opening) each counts 200.
  BOOST_TEST(packs_of(requests, 8, 408, 0) == two);
}

BOOST_AUTO_TEST_CASE(a_request_whose_questions_share_the_image_runs_alone) {
  // Three questions sharing 150 positions: their shared prefix (128 after rounding) goes first.
  const std::vector<prepared_request> requests = {single(200), sharing(3, 200, 150), single(200)};
  BOOST_TEST_REQUIRE(shared_prefix_tokens(requests[1], 64) == 128u);
  const std::vector<request_pack> expected = {{0, 2}, {1}};
  BOOST_TEST(packs_of(requests, 8, 100000) == expected);
}

BOOST_AUTO_TEST_CASE(questions_sharing_only_the_opening_pack_as_runs) {
  // Two questions apart right after the opening: each a run; together they count as two.
  const std::vector<prepared_request> requests = {sharing(2, 200, opening), single(200),
                                                  single(200)};
  BOOST_TEST_REQUIRE(shared_prefix_tokens(requests[0], 64) == 64u);
  const std::vector<request_pack> expected = {{0, 1}, {2}};
  BOOST_TEST(packs_of(requests, 3, 100000) == expected);
}

BOOST_AUTO_TEST_CASE(another_opening_closes_the_pack_and_starts_one) {
  std::vector<prepared_request> requests(4, single(200));
  requests[1].questions[0].input_ids[3] = 999;
  requests[2].questions[0].input_ids[3] = 999;
  const std::vector<request_pack> expected = {{0}, {1, 2}, {3}};
  BOOST_TEST(packs_of(requests, 8, 100000) == expected);
}

BOOST_AUTO_TEST_CASE(requests_without_the_opening_or_over_a_limit_run_alone) {
  prepared_request early_image = single(200);
  early_image.questions[0].image_start = 10;  // the image inside the opening: no common opening
  const std::vector<prepared_request> requests = {single(200), early_image, single(200),
                                                  sharing(4, 100, opening), single(900),
                                                  single(200)};
  // Runs: 4 questions exceed 3; rows: 836 exceed 500.
  const std::vector<request_pack> expected = {{0, 2, 5}, {1}, {3}, {4}};
  BOOST_TEST(packs_of(requests, 3, 500) == expected);
}

BOOST_AUTO_TEST_CASE(every_request_is_in_exactly_one_pack) {
  std::vector<prepared_request> requests;
  for (size_t i = 0; i < 40; ++i)
    requests.push_back(i % 5 == 1 ? sharing(2, 200, 150) : single(100 + 37 * (i % 7)));
  const std::vector<request_pack> packs = packs_of(requests, 4, 600);
  std::vector<int> seen(requests.size(), 0);
  size_t previous_first = 0;
  for (size_t p = 0; p < packs.size(); ++p) {
    BOOST_TEST_REQUIRE(!packs[p].empty());
    if (p > 0) BOOST_TEST(packs[p].front() > previous_first);  // ordered by first request
    previous_first = packs[p].front();
    size_t runs = 0, rows = 0;
    for (size_t i = 0; i < packs[p].size(); ++i) {
      const size_t r = packs[p][i];
      if (i > 0) BOOST_TEST(r > packs[p][i - 1]);
      ++seen[r];
      runs += requests[r].questions.size();
      for (const prepared_question& q : requests[r].questions) rows += q.input_ids.size() - opening;
    }
    if (packs[p].size() > 1) {
      BOOST_TEST(runs <= 4u);
      BOOST_TEST(rows <= 600u);
    }
  }
  for (size_t r = 0; r < requests.size(); ++r) BOOST_TEST(seen[r] == 1);
}
