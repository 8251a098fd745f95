// The serial half of the chunked delta rule: one block per (value head, 32 value columns, run)
// walks its run's chunks with the state in registers. Eight warps a block: warp w owns value
// columns 16 (w / 4) .. of the block and keys 32 (w % 4) .. of the state, as S^T (16 columns x
// 32 keys; m16 accumulators that are also the left operands of the next product). Per chunk, on
// tensor cores with split operands (split_mma.cuh):
//   1. each warp's partial S^T Wc^T and S^T (e^G Q)^T over its keys (into shared memory);
//   2. warp (c, q) sums the four key quarters' partials for chunk rows 16 q .., and forms
//      Vnew^T = Uc^T - S^T Wc^T for them (into shared memory);
//   3. each warp finishes O^T = S^T (e^G Q)^T + Vnew^T P^T for its 16 chunk rows, and updates its
//      keys: S^T <- e^G63 S^T + Vnew^T (e^(G63 - G) K).
// Splitting the keys puts two warps on every SM sub-partition (the serial chain is latency-bound;
// one warp of all 128 keys per 16 columns left half of them idle). The record of the next chunk
// streams into shared memory (cp.async) in two halves while the current one is computed.
#include "kernels/common.cuh"
#include "kernels/delta_rule_layout.cuh"
#include "kernels/split_mma.cuh"

namespace cua_s1::kernels::delta_rule {
namespace {

constexpr int key_quarters = 4;
constexpr int column_groups = 2;
constexpr int warps = key_quarters * column_groups;
constexpr int threads = 32 * warps;
constexpr int warp_columns = 16;
constexpr int block_columns = column_groups * warp_columns;
constexpr int warp_keys = head_dim / key_quarters;  // 32: two key steps of 16
constexpr int uc_stride = block_columns + 4;  // scalar reads at rows 2t apart hit distinct banks
constexpr int row_tiles = chunk / 8;          // accumulator tiles along the chunk rows

// Shared memory (32-bit words): the first half of a record [wc | q], the block's Uc columns,
// gamma; the second half [p | kd]; the warps' partial products (accumulator tiles, lane order:
// [warp][v, o][row tile][lane] x 4); Vnew^T per column group in the same order.
constexpr int first_words = int(uc_at - wc_at);
constexpr int uc_words = chunk * uc_stride;
constexpr int second_words = int(record_words - p_at);
constexpr int tile_floats = 32 * 4;  // one accumulator tile of a warp
constexpr int partial_words = warps * 2 * row_tiles * tile_floats;
constexpr int vnew_words = column_groups * row_tiles * tile_floats;
constexpr size_t shared_bytes =
    sizeof(uint32_t) * (first_words + uc_words + chunk + second_words + partial_words + vnew_words);

__device__ __forceinline__ uint4 fragment(const uint32_t* tiles, int tile) {
  return *reinterpret_cast<const uint4*>(tiles + tile * tile_words + (threadIdx.x % 32) * 4);
}

__device__ __forceinline__ void put_tile(float* tiles, int tile, const float (&acc)[4]) {
  *reinterpret_cast<float4*>(tiles + tile * tile_floats + (threadIdx.x % 32) * 4) =
      make_float4(acc[0], acc[1], acc[2], acc[3]);
}

__device__ __forceinline__ float4 get_tile(const float* tiles, int tile) {
  return *reinterpret_cast<const float4*>(tiles + tile * tile_floats + (threadIdx.x % 32) * 4);
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
  float* partial_s = reinterpret_cast<float*>(pk_s + second_words);
  float* vnew_s = partial_s + partial_words;
  const uint32_t* q_tiles = wcq_s + (q_at - wc_at);
  const uint32_t* kd_tiles = pk_s + (kd_at - p_at);

  const int h = int(blockIdx.x), column0 = int(blockIdx.y) * block_columns, run = int(blockIdx.z);
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  const int group = warp / key_quarters, quarter = warp % key_quarters;
  const int column = group * warp_columns + g;  // this thread's columns in the block: +0, +8
  const int key0 = quarter * warp_keys;         // this warp's keys
  const int64_t first_chunk = first_chunk_of(a.runs, run);
  const int64_t run_first = run_bound(a.runs, run), run_end = run_bound(a.runs, run + 1);
  const int64_t run_chunks = (run_end - run_first + chunk - 1) / chunk;
  const int64_t state_row = int64_t(h) * head_dim + column0 + column;  // rows of S^T in a state
  const int64_t state_at = int64_t(run) * a.state_stride;  // this run's state (0: the shared one)
  const uint32_t* head_records = records + (int64_t(h) * chunks + first_chunk) * record_words;
  float* my_partials = partial_s + warp * 2 * row_tiles * tile_floats;  // [v, o][row tile]
  float* group_vnew = vnew_s + group * row_tiles * tile_floats;

  load_first_half(head_records, column0, wcq_s, uc_s, gamma_s);
  async_commit();
  copy_async(pk_s, head_records + p_at, second_words);
  async_commit();

  float s[warp_keys / 8][4];  // S^T: rows column, column + 8; keys key0 + 8 n + 2t, + 1
#pragma unroll
  for (int n = 0; n < warp_keys / 8; ++n) {
    float2 upper = make_float2(0.f, 0.f), lower = upper;
    const int key = key0 + 8 * n + 2 * t;
    if (a.state_in) {
      upper = *reinterpret_cast<const float2*>(a.state_in + state_at + state_row * head_dim + key);
      lower =
          *reinterpret_cast<const float2*>(a.state_in + state_at + (state_row + 8) * head_dim + key);
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

    {  // 1. this warp's keys' share of S^T Wc^T and S^T (e^G Q)^T, all chunk rows
      float v[row_tiles][4] = {}, o[row_tiles][4] = {};
#pragma unroll
      for (int k = 0; k < warp_keys / 16; ++k) {
        const a_split state = split_a(s[2 * k], s[2 * k + 1]);
        const int key_step = key0 / 16 + k;
#pragma unroll
        for (int n = 0; n < row_tiles; ++n) {
          mma_split(v[n], state, fragment(wcq_s, n * 8 + key_step));
          mma_split(o[n], state, fragment(q_tiles, n * 8 + key_step));
        }
      }
#pragma unroll
      for (int n = 0; n < row_tiles; ++n) {
        put_tile(my_partials, n, v[n]);
        put_tile(my_partials, row_tiles + n, o[n]);
      }
    }
    __syncthreads();  // the partials are in

    // 2. chunk rows 16 quarter ..: the four quarters' sums; Vnew^T = Uc^T - S^T Wc^T
    float o[2][4];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const int n = 2 * quarter + m;
      float v[4] = {}, sum_o[4] = {};
#pragma unroll
      for (int q = 0; q < key_quarters; ++q) {
        const float* theirs = partial_s + (group * key_quarters + q) * 2 * row_tiles * tile_floats;
        const float4 pv = get_tile(theirs, n), po = get_tile(theirs, row_tiles + n);
        v[0] += pv.x, v[1] += pv.y, v[2] += pv.z, v[3] += pv.w;
        sum_o[0] += po.x, sum_o[1] += po.y, sum_o[2] += po.z, sum_o[3] += po.w;
      }
      const float* uc = uc_s + (8 * n + 2 * t) * uc_stride + column;
      const float vnew[4] = {uc[0] - v[0], uc[uc_stride] - v[1], uc[8] - v[2],
                             uc[uc_stride + 8] - v[3]};
      put_tile(group_vnew, n, vnew);
#pragma unroll
      for (int e = 0; e < 4; ++e) o[m][e] = sum_o[e];
    }
    const float decay = expf(gamma_s[chunk - 1]);
    async_wait<0>();  // p and kd of this chunk
    __syncthreads();  // Vnew is in; the first half is read
    if (c + 1 < run_chunks)
      load_first_half(head_records + (c + 1) * record_words, column0, wcq_s, uc_s, gamma_s);
    async_commit();

    // 3. O^T for this warp's chunk rows, then this warp's keys of the state
    a_split vnew[row_tiles / 2];
#pragma unroll
    for (int k = 0; k < row_tiles / 2; ++k) {
      const float4 low = get_tile(group_vnew, 2 * k), high = get_tile(group_vnew, 2 * k + 1);
      const float l[4] = {low.x, low.y, low.z, low.w}, u[4] = {high.x, high.y, high.z, high.w};
      vnew[k] = split_a(l, u);
    }
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const int n = 2 * quarter + m;
#pragma unroll
      for (int k = 0; k < row_tiles / 2; ++k)  // P is lower triangular: chunk rows j <= i
        if (2 * k <= n) mma_split(o[m], vnew[k], fragment(pk_s, n * 4 + k));
      const int i = 8 * n + 2 * t;
      float* row = out_columns + (t0 + i) * out_ld;
      if (i < rows) row[0] = o[m][0], row[8] = o[m][2];
      if (i + 1 < rows) row[out_ld] = o[m][1], row[out_ld + 8] = o[m][3];
    }
#pragma unroll
    for (int n = 0; n < warp_keys / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] *= decay;
#pragma unroll
    for (int k = 0; k < row_tiles / 2; ++k)
#pragma unroll
      for (int n = 0; n < warp_keys / 8; ++n)
        mma_split(s[n], vnew[k], fragment(kd_tiles, (key0 / 8 + n) * 4 + k));
    __syncthreads();  // the second half and Vnew are read
    if (c + 1 < run_chunks) copy_async(pk_s, head_records + (c + 1) * record_words + p_at, second_words);
    async_commit();
  }
  if (a.state_out) {
#pragma unroll
    for (int n = 0; n < warp_keys / 8; ++n) {
      const int key = key0 + 8 * n + 2 * t;
      *reinterpret_cast<float2*>(a.state_out + state_at + state_row * head_dim + key) =
          make_float2(s[n][0], s[n][1]);
      *reinterpret_cast<float2*>(a.state_out + state_at + (state_row + 8) * head_dim + key) =
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
