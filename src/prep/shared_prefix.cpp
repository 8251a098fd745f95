// Longest common prefix of the questions' token ids and positions, the rows it leaves a pass; the
// shared opening.
#include "prep/shared_prefix.hpp"

#include <algorithm>

namespace cua_s1 {

size_t shared_prefix_tokens(const prepared_request& request, size_t alignment) {
  const auto& questions = request.questions;
  if (questions.size() < 2) return 0;
  size_t shortest = questions.front().input_ids.size();
  for (const prepared_question& q : questions) shortest = std::min(shortest, q.input_ids.size());
  if (shortest == 0) return 0;
  const prepared_question& first = questions.front();
  size_t shared = 0;
  auto same_at = [&](const prepared_question& q, size_t i) {
    if (q.input_ids[i] != first.input_ids[i]) return false;
    for (size_t axis = 0; axis < 3; ++axis)
      if (q.positions.axes[axis].at(i) != first.positions.axes[axis].at(i)) return false;
    return true;
  };
  while (shared < shortest - 1 &&
         std::all_of(questions.begin(), questions.end(),
                     [&](const prepared_question& q) { return same_at(q, shared); }))
    ++shared;
  shared -= shared % std::max<size_t>(alignment, 1);
  return shared >= min_shared_prefix_tokens ? shared : 0;
}

size_t language_rows(const prepared_request& request) {
  const size_t shared = shared_prefix_tokens(request);
  size_t rows = shared;
  for (const prepared_question& q : request.questions) rows += q.input_ids.size() - shared;
  return rows;
}

size_t common_opening_tokens(const prepared_request& request, size_t length) {
  const auto& questions = request.questions;
  if (questions.empty() || length == 0) return 0;
  const prepared_question& first = questions.front();
  for (const prepared_question& q : questions) {
    if (q.input_ids.size() <= length || q.image_start < length) return 0;
    if (!std::equal(q.input_ids.begin(), q.input_ids.begin() + ptrdiff_t(length),
                    first.input_ids.begin()))
      return 0;
    for (const auto& axis : q.positions.axes) {
      if (axis.size() < length) return 0;
      for (size_t i = 0; i < length; ++i)
        if (axis[i] != int64_t(i)) return 0;
    }
  }
  return length;
}

std::vector<question_batch> suffix_batches(const prepared_request& request, size_t shared,
                                           size_t max_rows, size_t max_questions) {
  std::vector<question_batch> batches;
  size_t rows = 0;
  for (size_t i = 0; i < request.questions.size(); ++i) {
    const size_t suffix = request.questions[i].input_ids.size() - shared;
    if (batches.empty() || batches.back().count == max_questions || rows + suffix > max_rows) {
      batches.push_back({i, 0});
      rows = 0;
    }
    ++batches.back().count;
    rows += suffix;
  }
  return batches;
}

}  // namespace cua_s1
