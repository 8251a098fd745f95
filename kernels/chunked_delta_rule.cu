// The chunked gated delta rule (spec/model.md 4.4 step 5): argument checks and the two kernels,
// delta_rule_prepare.cu (per chunk and value head, all chunks of all runs at once) and
// delta_rule_state.cu (per value head, column slice and run, chunk after chunk).
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/delta_rule_layout.cuh"
#include "kernels/gated_deltanet.hpp"

namespace cua_s1::kernels {

size_t delta_rule_scratch_floats(const row_runs& runs, int64_t value_heads, int64_t key_dim,
                                 int64_t value_dim) {
  (void)key_dim, (void)value_dim;  // both 128 (gated_delta_rule checks)
  return size_t(value_heads * delta_rule::total_chunks(runs) * delta_rule::record_words);
}

void gated_delta_rule(const delta_rule_args& arguments, cudaStream_t stream) {
  delta_rule_args args = arguments;
  if (args.runs.count == 0) args.runs = single_run(args.tokens);
  if (args.runs.count > max_runs || args.runs.rows() != args.tokens)
    throw std::invalid_argument("gated_delta_rule: runs do not cover the tokens");
  if (args.state_out && args.runs.count != 1 && args.state_stride == 0)
    throw std::invalid_argument("gated_delta_rule: several runs keep their states only apart "
                                "(state_stride)");
  if (args.state_stride != 0 &&
      (args.state_stride < args.value_heads * args.value_dim * args.key_dim || args.state_stride % 2))
    throw std::invalid_argument("gated_delta_rule: state_stride must hold a whole state, even");
  if (args.tokens == 0) return;
  if (args.key_heads == 0 || args.value_heads % args.key_heads != 0)
    throw std::invalid_argument("gated_delta_rule: value heads must be a multiple of key heads");
  if (args.key_dim != delta_rule::head_dim || args.value_dim != delta_rule::head_dim)
    throw std::invalid_argument("gated_delta_rule: key and value heads must have 128 dims");
  if (!args.scratch) throw std::invalid_argument("gated_delta_rule: no scratch");
  if (args.ld % 4 || args.q_offset % 4 || args.k_offset % 4 || args.v_offset % 4 ||
      reinterpret_cast<uintptr_t>(args.qkv) % 16 || reinterpret_cast<uintptr_t>(args.out) % 8)
    throw std::invalid_argument("gated_delta_rule: q/k/v rows must be 16-byte aligned");
  if (reinterpret_cast<uintptr_t>(args.scratch) % 16 || (args.state_in && reinterpret_cast<uintptr_t>(args.state_in) % 8) ||
      (args.state_out && reinterpret_cast<uintptr_t>(args.state_out) % 8))
    throw std::invalid_argument("gated_delta_rule: scratch and state must be aligned");
  const int64_t chunks = delta_rule::total_chunks(args.runs);
  uint32_t* records = reinterpret_cast<uint32_t*>(args.scratch);
  delta_rule::launch_prepare(args, chunks, records, stream);
  delta_rule::launch_state(args, chunks, records, stream);
}

}  // namespace cua_s1::kernels
