// Several sequences stacked row-wise in one pass (the questions' suffixes of one request, the
// prompts of a pack of requests, the images of a packed vision pass): run r owns rows
// [bounds[r], bounds[r + 1]). Row-wise work (GEMMs, norms) ignores the runs; the
// sequence-mixing kernels (causal conv, delta rule, attention) keep them apart. Passed to kernels
// by value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace cua_s1::kernels {

// The most questions a request may carry, and the most runs (questions, images) one pass packs.
inline constexpr int max_runs = 8;

struct row_runs {
  int count = 0;
  int64_t bounds[max_runs + 1] = {};

  int64_t rows() const { return bounds[count]; }
  int64_t length(int r) const { return bounds[r + 1] - bounds[r]; }
  int64_t longest() const {
    int64_t most = 0;
    for (int r = 0; r < count; ++r) most = length(r) > most ? length(r) : most;
    return most;
  }
};

// One run of `rows` rows.
inline row_runs single_run(int64_t rows) {
  row_runs runs;
  runs.count = 1;
  runs.bounds[1] = rows;
  return runs;
}

// Runs of the given lengths, in order; 1 to max_runs lengths, each at least 1.
inline row_runs runs_of(const std::vector<int64_t>& lengths) {
  if (lengths.empty() || lengths.size() > size_t(max_runs))
    throw std::invalid_argument("row_runs: 1 to 8 runs");
  row_runs runs;
  runs.count = int(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] <= 0) throw std::invalid_argument("row_runs: an empty run");
    runs.bounds[r + 1] = runs.bounds[r] + lengths[r];
  }
  return runs;
}

#ifdef __CUDACC__
// Device lookups unrolled over max_runs: indexing the by-value parameter with a run number known
// only at run time would copy it to local memory in every thread.
__device__ __forceinline__ int64_t run_bound(const row_runs& runs, int r) {
  int64_t bound = 0;
#pragma unroll
  for (int i = 0; i <= max_runs; ++i)
    if (i == r) bound = runs.bounds[i];
  return bound;
}

// The run holding `row`.
__device__ __forceinline__ int run_of(const row_runs& runs, int64_t row) {
  int run = 0;
#pragma unroll
  for (int r = 1; r < max_runs; ++r)
    if (r < runs.count && row >= runs.bounds[r]) run = r;
  return run;
}
#endif

}  // namespace cua_s1::kernels
