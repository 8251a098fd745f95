// Which requests of an executor pass share one packed language pass: the prompts of requests
// that start with the same opening and share no longer prefix between their own questions go
// through the layers together, each question a run continuing from the opening's state.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "prep/request_preparer.hpp"

namespace cua_s1 {

// Indices into a pass's requests, in order, that one language pass runs together.
using request_pack = std::vector<size_t>;

// Splits a pass's requests into packs. A request packs when each of its questions runs whole
// after the first `opening` positions (common_opening_tokens(request, opening) == opening, the
// same ids as the pack's other requests) and its questions share no prefix past that
// (shared_prefix_tokens(request, alignment) <= opening); `opening` 0 packs from the prompt's
// start.
// Packable requests fill packs in order up to `max_runs` questions and `max_rows` positions
// after the opening; a pack that cannot take the next one is closed. Every other request (a
// shared image prefix of its own, a different opening, more questions or rows than a pack takes)
// is a pack of its own. Every request is in exactly one pack; packs are ordered by their first
// request.
std::vector<request_pack> language_packs(std::span<const prepared_request* const> requests,
                                         size_t opening, size_t alignment, size_t max_runs,
                                         size_t max_rows);

}  // namespace cua_s1
