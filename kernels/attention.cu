// Row softmax over attention scores: one block per row, fp32 max/sum, bf16 probabilities.
#include "kernels/attention.hpp"
#include "kernels/common.cuh"

namespace cua_s1::kernels {
namespace {

__global__ void softmax_kernel(softmax_args a) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;  // b * rows + r
  const int64_t r = row % a.rows;
  if (r >= a.valid_rows) return;
  const float* s = a.scores + row * a.ld_scores;
  bf16* p = a.probs + row * a.ld_probs;
  const int64_t visible = a.causal ? min(a.keys, a.first_row + r + 1) : a.keys;
  float top = -INFINITY;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) top = fmaxf(top, s[j] * a.scale);
  top = block_max(top, scratch);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) sum += expf(s[j] * a.scale - top);
  const float inv = 1.0f / block_sum(sum, scratch);
  for (int64_t j = threadIdx.x; j < a.ld_probs; j += blockDim.x)
    p[j] = to_bf16(j < visible ? expf(s[j] * a.scale - top) * inv : 0.0f);
}

}  // namespace

void softmax_to_bf16(const softmax_args& args, cudaStream_t stream) {
  if (args.batches * args.rows == 0) return;
  softmax_kernel<<<unsigned(args.batches * args.rows), 256, 0, stream>>>(args);
  check_launch("softmax_to_bf16");
}

}  // namespace cua_s1::kernels
