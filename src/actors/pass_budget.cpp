// Budget arithmetic of an executor pass.
#include "actors/pass_budget.hpp"

#include "prep/shared_prefix.hpp"

namespace cua_s1 {

pass_share share_of(const prepared_request& request) {
  const grid_thw& grid = request.pixels.grid;
  return {language_rows(request), size_t(grid.t) * grid.h * grid.w};
}

bool pass_load::admits(const pass_share& next, const pass_budget& budget) const {
  if (requests == 0) return true;
  return requests < budget.max_requests && rows + next.rows <= budget.max_rows &&
         patches + next.patches <= budget.max_patches;
}

void pass_load::add(const pass_share& next) {
  ++requests;
  rows += next.rows;
  patches += next.patches;
}

}  // namespace cua_s1
