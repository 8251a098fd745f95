// Row gathers for the input embedding and one warp per letter for the tied-head readout.
#include "kernels/common.cuh"
#include "kernels/embedding.hpp"

namespace cua_s1::kernels {
namespace {

__global__ void embed_kernel(const bf16* table, const float* image, const int32_t* sources,
                             int64_t tokens, int64_t hidden, float* h) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * hidden) return;
  const int64_t t = i / hidden, d = i % hidden;
  const int64_t source = sources[t];
  h[i] = source >= 0 ? to_float(table[source * hidden + d]) : image[(-source - 1) * hidden + d];
}

__global__ void letter_kernel(const float* state, const bf16* table, const int32_t* ids,
                              int64_t count, int64_t hidden, float* logits) {
  const int64_t letter = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (letter >= count) return;
  const bf16* row = table + int64_t(ids[letter]) * hidden;
  float sum = 0;
  for (int64_t d = lane; d < hidden; d += 32) sum += state[d] * to_float(row[d]);
  sum = warp_sum(sum);
  if (lane == 0) logits[letter] = sum;
}

}  // namespace

void embed_tokens(const bf16* table, const float* image, const int32_t* sources, int64_t tokens,
                  int64_t hidden, float* h, cudaStream_t stream) {
  if (tokens * hidden == 0) return;
  embed_kernel<<<blocks_for(tokens * hidden, 256), 256, 0, stream>>>(table, image, sources, tokens,
                                                                    hidden, h);
  check_launch("embed_tokens");
}

void letter_logits(const float* hidden_state, const bf16* table, const int32_t* ids, int64_t count,
                   int64_t hidden, float* logits, cudaStream_t stream) {
  if (count == 0) return;
  letter_kernel<<<blocks_for(count, 4), 128, 0, stream>>>(hidden_state, table, ids, count, hidden,
                                                         logits);
  check_launch("letter_logits");
}

}  // namespace cua_s1::kernels
