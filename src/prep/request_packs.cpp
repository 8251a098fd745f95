// Grouping a pass's requests into packed language passes.
#include "prep/request_packs.hpp"

#include <algorithm>
#include <optional>

#include "prep/shared_prefix.hpp"

namespace cua_s1 {
namespace {

// The questions and positions after the opening a request adds to a pack, or nothing when it
// cannot join one.
struct pack_share {
  size_t runs = 0, rows = 0;
};

std::optional<pack_share> share_of(const prepared_request& request, size_t opening,
                                   size_t alignment) {
  if (request.questions.empty()) return std::nullopt;
  if (opening > 0 && common_opening_tokens(request, opening) != opening) return std::nullopt;
  if (shared_prefix_tokens(request, alignment) > opening) return std::nullopt;
  pack_share share{request.questions.size(), 0};
  for (const prepared_question& question : request.questions)
    share.rows += question.input_ids.size() - opening;
  return share;
}

bool same_opening(const prepared_request& a, const prepared_request& b, size_t opening) {
  const auto& x = a.questions.front().input_ids;
  const auto& y = b.questions.front().input_ids;
  return std::equal(x.begin(), x.begin() + ptrdiff_t(opening), y.begin());
}

}  // namespace

std::vector<request_pack> language_packs(std::span<const prepared_request* const> requests,
                                         size_t opening, size_t alignment, size_t max_runs,
                                         size_t max_rows) {
  std::vector<request_pack> packs;
  std::optional<size_t> open;  // the pack still taking requests
  pack_share filled;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::optional<pack_share> share = share_of(*requests[i], opening, alignment);
    if (!share || share->runs > max_runs || share->rows > max_rows) {
      packs.push_back({i});
      continue;
    }
    const bool fits = open && filled.runs + share->runs <= max_runs &&
                      filled.rows + share->rows <= max_rows &&
                      same_opening(*requests[packs[*open].front()], *requests[i], opening);
    if (fits) {
      packs[*open].push_back(i);
      filled.runs += share->runs;
      filled.rows += share->rows;
    } else {
      open = packs.size();
      packs.push_back({i});
      filled = *share;
    }
  }
  return packs;
}

}  // namespace cua_s1
