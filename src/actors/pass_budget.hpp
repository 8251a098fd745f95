// The budgets of one executor pass (how many requests, language rows and vision patches it may
// hold) and the load of a pass being formed.
#pragma once

#include <cstddef>

#include "prep/request_preparer.hpp"

namespace cua_s1 {

struct pass_budget {
  size_t max_requests = 8;
  size_t max_rows = 8192;      // language rows (language_rows, prep/shared_prefix.hpp)
  size_t max_patches = 32768;  // vision patches: eight 1280x720 screenshots
};

// What one request takes of a pass.
struct pass_share {
  size_t rows = 0;
  size_t patches = 0;
};

// The request's language rows and its image's patches (grid t * h * w).
pass_share share_of(const prepared_request& request);

// A pass being formed: the requests, rows and patches it holds so far.
struct pass_load {
  size_t requests = 0;
  size_t rows = 0;
  size_t patches = 0;

  // Whether a request taking `next` fits beside what the pass holds. An empty pass takes any
  // request, so that one over a budget on its own runs alone.
  bool admits(const pass_share& next, const pass_budget& budget) const;
  void add(const pass_share& next);
};

}  // namespace cua_s1
