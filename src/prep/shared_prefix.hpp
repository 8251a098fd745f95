// The prompt prefix every question of a request shares, so that a backend can run it once, and
// the opening every request shares, so that a backend can keep it.
#pragma once

#include <cstddef>
#include <vector>

#include "prep/request_preparer.hpp"

namespace cua_s1 {

// Questions sharing fewer positions than this run whole: a prefix pass reads every weight once
// more, which only pays off over a long prefix (the image).
inline constexpr size_t min_shared_prefix_tokens = 64;

// The number of leading positions with the same token id and the same three M-RoPE positions in
// every question, at most the shortest prompt minus one (each question keeps at least its last
// token to read out), rounded down to a multiple of `alignment` (the CUDA backend's GDN chunk, so
// that a suffix starts on the chunk boundary a whole-prompt run would have). 0 for fewer than
// two questions or a prefix under min_shared_prefix_tokens.
size_t shared_prefix_tokens(const prepared_request& request, size_t alignment = 1);

// The language rows a pass computes for `request`: the questions' shared prefix
// (shared_prefix_tokens) once, then each question's positions after it; with no shared prefix,
// every question's whole prompt. What a request takes of an executor pass's row budget.
size_t language_rows(const prepared_request& request);

// The prompt opening every request shares (the chat template's system text before the image):
// `length` when every question has more than `length` positions, the same ids over the first
// `length` of them, positions 0.. on all three M-RoPE axes there and its image only after them;
// else 0. A backend may keep the opening's state between requests, keyed by those ids.
size_t common_opening_tokens(const prepared_request& request, size_t length);

// Consecutive questions whose prompts after the first `shared` positions run as one pass.
struct question_batch {
  size_t first = 0, count = 0;
};

// Splits the questions, in order, into batches of at most `max_questions` whose suffixes (the
// positions after `shared`) add up to at most `max_rows`; a question longer than that on its own
// gets a batch of its own. Bounds the activation memory of a batched pass by that of one prompt
// of max_rows positions.
std::vector<question_batch> suffix_batches(const prepared_request& request, size_t shared,
                                           size_t max_rows, size_t max_questions);

}  // namespace cua_s1
