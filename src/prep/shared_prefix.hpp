// The prompt prefix every question of a request shares, so that a backend can run it once.
#pragma once

#include <cstddef>

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

}  // namespace cua_s1
