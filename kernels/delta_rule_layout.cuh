// What the two kernels of the chunked delta rule share: where each chunk lies among the runs, and
// the record the prepare kernel leaves per (value head, chunk) for the state kernel. A record's
// operands of the state kernel's tensor-core products are stored as split B fragments in the
// order that kernel reads them (tile after tile, 32 lanes x uint4 each; see split_mma.cuh):
//   wc   Wc = (I + A)^-1 (beta e^Gamma K), B(k = key, n = chunk row)         8 x 8 tiles (n, k)
//   q    e^Gamma Q,                         B(k = key, n = chunk row)         8 x 8 tiles (n, k)
//   uc   Uc = (I + A)^-1 (beta V), fp32 [64 rows][128]
//   gamma the in-chunk cumulative log decay, fp32 [64]
//   p    P = (q.k) Dec (j <= i),             B(k = j, n = i)                   8 x 4 tiles (n, k)
//   kd   e^(Gamma_63 - Gamma) K,            B(k = chunk row, n = key)        16 x 4 tiles (n, k)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gated_deltanet.hpp"

namespace cua_s1::kernels::delta_rule {

constexpr int chunk = int(delta_rule_chunk);
constexpr int head_dim = 128;  // key_dim = value_dim
constexpr int tile_words = 32 * 4;

constexpr int64_t wc_at = 0;
constexpr int64_t q_at = wc_at + 64 * tile_words;
constexpr int64_t uc_at = q_at + 64 * tile_words;
constexpr int64_t gamma_at = uc_at + chunk * head_dim;
constexpr int64_t p_at = gamma_at + chunk;
constexpr int64_t kd_at = p_at + 32 * tile_words;
constexpr int64_t record_words = kd_at + 64 * tile_words;

inline int64_t chunks_of(int64_t rows) { return (rows + chunk - 1) / chunk; }

inline int64_t total_chunks(const row_runs& runs) {
  int64_t chunks = 0;
  for (int r = 0; r < runs.count; ++r) chunks += chunks_of(runs.length(r));
  return chunks;
}

// Where chunk `c` (counted over all runs, each run's chunks in order) lies.
struct chunk_place {
  int64_t t0;  // its first row
  int rows;    // its rows (the last chunk of a run may be short)
};

#ifdef __CUDACC__
__device__ __forceinline__ chunk_place locate_chunk(const row_runs& runs, int64_t c) {
  chunk_place place{0, 0};
  bool found = false;
#pragma unroll
  for (int r = 0; r < max_runs; ++r) {  // unrolled: constant indices into the parameter
    if (found || r >= runs.count) continue;
    const int64_t length = runs.bounds[r + 1] - runs.bounds[r];
    const int64_t in_run = (length + chunk - 1) / chunk;
    if (c < in_run) {
      place.t0 = runs.bounds[r] + c * chunk;
      place.rows = int(min(int64_t(chunk), runs.bounds[r + 1] - place.t0));
      found = true;
    }
    c -= in_run;
  }
  return place;
}

// The first chunk of run r among all runs' chunks.
__device__ __forceinline__ int64_t first_chunk_of(const row_runs& runs, int run) {
  int64_t first = 0;
#pragma unroll
  for (int r = 0; r < max_runs; ++r)
    if (r < run) first += (runs.bounds[r + 1] - runs.bounds[r] + chunk - 1) / chunk;
  return first;
}
#endif

// The records of `chunks` chunks for every value head ([value head][chunk]) from `scratch`.
void launch_prepare(const delta_rule_args& args, int64_t chunks, uint32_t* records,
                    cudaStream_t stream);
void launch_state(const delta_rule_args& args, int64_t chunks, const uint32_t* records,
                  cudaStream_t stream);

}  // namespace cua_s1::kernels::delta_rule
