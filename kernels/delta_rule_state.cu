// The serial half of the chunked delta rule: one block per (value head, 32 value columns, run)
// walks its run's chunks with the state in registers, each warp owning 16 value columns as S^T
// (16 columns x 128 keys, an m16 accumulator that is also the left operand of the next product).
// Per chunk, on tensor cores with split operands (split_mma.cuh):
//   Vnew^T = Uc^T - S^T Wc^T;   O^T = S^T (e^G Q)^T + Vnew^T P^T;
//   S^T <- e^G63 S^T + Vnew^T (e^(G63 - G) K).
// The record of the next chunk streams into shared memory (cp.async) in two halves while the
// current one is computed.
#include "kernels/common.cuh"
#include "kernels/delta_rule_layout.cuh"
#include "kernels/split_mma.cuh"

namespace cua_s1::kernels::delta_rule {
namespace {

// Two warps (32 value columns) a block: 128 blocks for 32 value heads fill the SMs (four warps
// a block left half of them idle; ncu: 0.17 eligible warps per scheduler, latency-bound).
constexpr int warps = 2;
constexpr int threads = 32 * warps;
constexpr int warp_columns = 16;
constexpr int block_columns = warps * warp_columns;
constexpr int uc_stride = block_columns + 4;  // scalar reads at rows 2t apart hit distinct banks

// Shared memory (32-bit words): the first half of a record [wc | q], the block's Uc columns,
// gamma; then the second half [p | kd].
constexpr int first_words = int(uc_at - wc_at);
constexpr int uc_words = chunk * uc_stride;
constexpr int second_words = int(record_words - p_at);
constexpr size_t shared_bytes = sizeof(uint32_t) * (first_words + uc_words + chunk + second_words);

__device__ __forceinline__ uint4 fragment(const uint32_t* tiles, int tile) {
  return *reinterpret_cast<const uint4*>(tiles + tile * tile_words + (threadIdx.x % 32) * 4);
}

// Copies `words` words (a multiple of 4) with all threads.
__device__ __forceinline__ void copy_async(uint32_t* dst, const uint32_t* src, int words) {
  for (int e = int(threadIdx.x) * 4; e < words; e += threads * 4) copy16_async(dst + e, src + e, true);
}

__device__ __forceinline__ void load_first_half(const uint32_t* record, int column0, uint32_t* wcq_s,
                                                float* uc_s, float* gamma_s) {
  copy_async(wcq_s, record + wc_at, first_words);
  const float* uc = reinterpret_cast<const float*>(record + uc_at);
  for (int e = int(threadIdx.x); e < chunk * block_columns / 4; e += threads) {
    const int r = e / (block_columns / 4), c = (e % (block_columns / 4)) * 4;
    copy16_async(uc_s + r * uc_stride + c, uc + r * head_dim + column0 + c, true);
  }
  if (threadIdx.x < chunk / 4)
    copy16_async(gamma_s + threadIdx.x * 4, record + gamma_at + threadIdx.x * 4, true);
}

__global__ void __launch_bounds__(threads)
    state_kernel(delta_rule_args a, int64_t chunks, const uint32_t* records) {
  extern __shared__ __align__(16) uint32_t shared[];
  uint32_t* wcq_s = shared;  // wc tiles, then q tiles
  float* uc_s = reinterpret_cast<float*>(wcq_s + first_words);
  float* gamma_s = uc_s + uc_words;
  uint32_t* pk_s = reinterpret_cast<uint32_t*>(gamma_s + chunk);  // p tiles, then kd tiles
  const uint32_t* q_tiles = wcq_s + (q_at - wc_at);
  const uint32_t* kd_tiles = pk_s + (kd_at - p_at);

  const int h = int(blockIdx.x), column0 = int(blockIdx.y) * block_columns, run = int(blockIdx.z);
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  const int column = warp * warp_columns + g;  // this thread's columns in the block: +0, +8
  const int64_t first_chunk = first_chunk_of(a.runs, run);
  const int64_t run_first = run_bound(a.runs, run), run_end = run_bound(a.runs, run + 1);
  const int64_t run_chunks = (run_end - run_first + chunk - 1) / chunk;
  const int64_t state_row = int64_t(h) * head_dim + column0 + column;  // rows of S^T in state_in
  const uint32_t* head_records = records + (int64_t(h) * chunks + first_chunk) * record_words;

  load_first_half(head_records, column0, wcq_s, uc_s, gamma_s);
  async_commit();
  copy_async(pk_s, head_records + p_at, second_words);
  async_commit();

  float s[16][4];  // S^T: rows column, column + 8; keys 8 n + 2t, + 1
#pragma unroll
  for (int n = 0; n < 16; ++n) {
    float2 upper = make_float2(0.f, 0.f), lower = upper;
    if (a.state_in) {
      upper = *reinterpret_cast<const float2*>(a.state_in + state_row * head_dim + 8 * n + 2 * t);
      lower = *reinterpret_cast<const float2*>(a.state_in + (state_row + 8) * head_dim + 8 * n + 2 * t);
    }
    s[n][0] = upper.x, s[n][1] = upper.y, s[n][2] = lower.x, s[n][3] = lower.y;
  }
  const int64_t out_ld = a.value_heads * head_dim;
  float* out_columns = a.out + int64_t(h) * head_dim + column0 + column;

  for (int64_t c = 0; c < run_chunks; ++c) {
    const int64_t t0 = run_first + c * chunk;
    const int rows = int(min(int64_t(chunk), run_end - t0));
    async_wait<1>();
    __syncthreads();  // wc, q, uc, gamma of this chunk are in

    float v[8][4] = {}, o[8][4] = {};  // Vnew^T and O^T: rows column (+8), chunk rows 8 n + 2t (+1)
#pragma unroll
    for (int k = 0; k < 8; ++k) {  // keys 16 k ..
      const a_split state = split_a(s[2 * k], s[2 * k + 1]);
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        mma_split(v[n], state, fragment(wcq_s, n * 8 + k));
        mma_split(o[n], state, fragment(q_tiles, n * 8 + k));
      }
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const float* uc = uc_s + (8 * n + 2 * t) * uc_stride + column;
      v[n][0] = uc[0] - v[n][0];
      v[n][1] = uc[uc_stride] - v[n][1];
      v[n][2] = uc[8] - v[n][2];
      v[n][3] = uc[uc_stride + 8] - v[n][3];
    }
    const float decay = expf(gamma_s[chunk - 1]);
    __syncthreads();  // the first half is read
    if (c + 1 < run_chunks)
      load_first_half(head_records + (c + 1) * record_words, column0, wcq_s, uc_s, gamma_s);
    async_commit();
    async_wait<1>();
    __syncthreads();  // p and kd of this chunk are in

#pragma unroll
    for (int n = 0; n < 16; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] *= decay;
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // chunk rows 16 k ..
      const a_split vnew = split_a(v[2 * k], v[2 * k + 1]);
#pragma unroll
      for (int n = 2 * k; n < 8; ++n) mma_split(o[n], vnew, fragment(pk_s, n * 4 + k));  // P lower
#pragma unroll
      for (int n = 0; n < 16; ++n) mma_split(s[n], vnew, fragment(kd_tiles, n * 4 + k));
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const int i = 8 * n + 2 * t;
      float* row = out_columns + (t0 + i) * out_ld;
      if (i < rows) row[0] = o[n][0], row[8] = o[n][2];
      if (i + 1 < rows) row[out_ld] = o[n][1], row[out_ld + 8] = o[n][3];
    }
    __syncthreads();  // the second half is read
    if (c + 1 < run_chunks) copy_async(pk_s, head_records + (c + 1) * record_words + p_at, second_words);
    async_commit();
  }
  if (a.state_out) {
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      *reinterpret_cast<float2*>(a.state_out + state_row * head_dim + 8 * n + 2 * t) =
          make_float2(s[n][0], s[n][1]);
      *reinterpret_cast<float2*>(a.state_out + (state_row + 8) * head_dim + 8 * n + 2 * t) =
          make_float2(s[n][2], s[n][3]);
    }
  }
}

}  // namespace

void launch_state(const delta_rule_args& args, int64_t chunks, const uint32_t* records,
                  cudaStream_t stream) {
  static const bool configured =
      (allow_dynamic_shared(reinterpret_cast<const void*>(state_kernel), shared_bytes,
                            "gated_delta_rule (state)"),
       true);
  (void)configured;
  state_kernel<<<dim3(unsigned(args.value_heads), unsigned(head_dim / block_columns),
                      unsigned(args.runs.count)),
                 threads, shared_bytes, stream>>>(args, chunks, records);
  check_launch("gated_delta_rule (state)");
}

}  // namespace cua_s1::kernels::delta_rule
