// The parallel half of the chunked delta rule: one block per (chunk, value head), the chunks of
// every run at once, leaves the record of delta_rule_layout.cuh: the in-chunk cumulative log
// decay Gamma, P = (q.k) Dec (j <= i), the unit-lower-triangular (I + A)^-1 (forward
// substitution in 16 x 16 blocks, fp32), Uc = (I + A)^-1 (beta V), Wc = (I + A)^-1 (beta e^G K),
// and the state kernel's scaled q and k. The products q.k, k.k, Uc and Wc run on tensor cores
// with split operands (split_mma.cuh); each warp owns 16 rows of the chunk and half of the
// columns (8 warps). P and Wc go to the record straight from the accumulators, and the buffers
// are reused phase after phase, so a block needs 72.7 KB of shared memory: three share an SM.
#include "kernels/common.cuh"
#include "kernels/delta_rule_layout.cuh"
#include "kernels/split_mma.cuh"

namespace cua_s1::kernels::delta_rule {
namespace {

constexpr int warps = 8;
constexpr int threads = 32 * warps;
constexpr int row_slabs = 4;  // warp w: rows 16 (w % 4) .., column half w / 4
// Row strides (floats): float2 reads along rows at 8 (mod 32) hit distinct banks (reads down the
// columns of q, k, beta e^G k and beta v meet two-way conflicts).
constexpr int wide_stride = head_dim + 8;  // q, k, beta e^G k, beta v
constexpr int square_stride = chunk + 8;   // -A, then (I + A)^-1, and the inversion's scratch

// X = (I - L)^-1 for the strictly lower 64 x 64 L in w (= -A), in blocks of 16: the four
// diagonal blocks X_bb = (I - L_bb)^-1 by forward substitution, one warp each, then the blocks
// below them by distance d = 1, 2, 3: X_ij = X_ii sum_{k=j}^{i-1} L_ik X_kj. X is built in
// `scratch` (64 rows of square_stride floats) and copied over w. Six barriers instead of two per
// row.
__device__ __forceinline__ void invert_unit_lower(float* w, float* scratch) {
  constexpr int block = 16;
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  for (int e = tid; e < chunk * square_stride; e += threads) scratch[e] = 0.0f;
  __syncthreads();
  if (warp < chunk / block && lane < block) {  // X_bb, row by row; lane = column
    const int base = warp * block, col = base + lane;
    for (int r = base; r < base + block; ++r) {
      if (col < r) {  // X[r][col] = L[r][col] + sum_{col < m < r} L[r][m] X[m][col]
        float v = w[r * square_stride + col];
        for (int m = col + 1; m < r; ++m) v += w[r * square_stride + m] * scratch[m * square_stride + col];
        scratch[r * square_stride + col] = v;
      } else if (col == r) {
        scratch[r * square_stride + col] = 1.0f;
      }
      __syncwarp(0x0000ffffu);
    }
  }
  constexpr int per_thread = (chunk / block - 1) * block * block / threads;  // 3
  for (int d = 1; d < chunk / block; ++d) {
    const int outputs = (chunk / block - d) * block * block;
    float value[per_thread];
    __syncthreads();  // the blocks at distance < d are final
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {  // S = sum_k L_ik X_kj
      const int idx = tid + o * threads;
      value[o] = 0.0f;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      const int r = i * block + (idx / block) % block, c = j * block + idx % block;
      float sum = 0.0f;
      for (int m = j * block; m < i * block; ++m) sum += w[r * square_stride + m] * scratch[m * square_stride + c];
      value[o] = sum;
    }
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {  // S into X_ij's place
      const int idx = tid + o * threads;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      scratch[(i * block + (idx / block) % block) * square_stride + j * block + idx % block] = value[o];
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {  // X_ij = X_ii S
      const int idx = tid + o * threads;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      const int r = i * block + (idx / block) % block, c = j * block + idx % block;
      float sum = 0.0f;
      for (int m = i * block; m <= r; ++m) sum += scratch[r * square_stride + m] * scratch[m * square_stride + c];
      value[o] = sum;
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {
      const int idx = tid + o * threads;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      scratch[(i * block + (idx / block) % block) * square_stride + j * block + idx % block] = value[o];
    }
  }
  __syncthreads();
  for (int e = tid; e < chunk * square_stride; e += threads) w[e] = scratch[e];
  __syncthreads();
}

// Stores `count` split B fragments, fragment f computed by make(f), each warp taking every
// fourth one: lane l writes the 16 bytes at f * tile_words + 4 l.
template <class Make>
__device__ __forceinline__ void store_fragments(uint32_t* tiles, int count, Make make) {
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  for (int f = warp; f < count; f += warps)
    *reinterpret_cast<uint4*>(tiles + f * tile_words + lane * 4) = make(f);
}

// acc[n] = sum_j T[16 slab + ., j] X[j][64 half + 8 n + .] over the nonzero (lower) blocks of T:
// the part of (I + A)^-1 X owned by this warp, as 8 accumulator tiles of 8 columns.
__device__ __forceinline__ void lower_times(const float* t_s, const float* x_s, float (&acc)[8][4]) {
  const int warp = int(threadIdx.x / 32), slab = warp % row_slabs, half = warp / row_slabs;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
  for (int k = 0; k <= slab; ++k) {
    const a_split lower = split_a_rows(t_s, square_stride, 16 * slab, 16 * k);
#pragma unroll
    for (int n = 0; n < 8; ++n)
      mma_split(acc[n], lower, split_b_down_columns(x_s, wide_stride, 64 * half + 8 * n, 16 * k));
  }
}

// Writes the split B fragments of B(k, n) = X[n][k] for this warp's accumulator tiles
// `even` and `odd` (rows 16 slab + g, + 8; columns 16 k_step + 2t, + 8): with that k step, the
// rows g are fragment tile (2 slab, k_step) of `tiles` and the rows g + 8 tile (2 slab + 1, k_step),
// `k_steps` tiles a row of tiles. The accumulators hold exactly the lane's fragment elements.
__device__ __forceinline__ void store_accumulator_fragments(uint32_t* tiles, int k_steps, int k_step,
                                                            const float (&even)[4],
                                                            const float (&odd)[4]) {
  const int slab = int(threadIdx.x / 32) % row_slabs, lane = int(threadIdx.x % 32);
  const uint4 upper = b_of(split_pair_of(even[0], even[1]), split_pair_of(odd[0], odd[1]));
  const uint4 lower = b_of(split_pair_of(even[2], even[3]), split_pair_of(odd[2], odd[3]));
  *reinterpret_cast<uint4*>(tiles + ((2 * slab) * k_steps + k_step) * tile_words + lane * 4) = upper;
  *reinterpret_cast<uint4*>(tiles + ((2 * slab + 1) * k_steps + k_step) * tile_words + lane * 4) =
      lower;
}

__global__ void __launch_bounds__(threads, 3)
    prepare_kernel(delta_rule_args a, int64_t chunks, uint32_t* records) {
  extern __shared__ __align__(16) float shared[];
  // q, then -A | the inversion's scratch, then (I + A)^-1 | -
  float* q_s = shared;
  float* t_s = q_s;
  float* scratch_s = t_s + chunk * square_stride;
  float* k_s = scratch_s + chunk * square_stride;  // k, then beta e^G k, then beta v
  float* gamma_s = k_s + chunk * wide_stride;      // Gamma
  float* beta_s = gamma_s + chunk;
  float* rise_s = beta_s + chunk;   // e^Gamma
  float* fall_s = rise_s + chunk;   // e^(Gamma_63 - Gamma)

  const int c = int(blockIdx.x), h = int(blockIdx.y), tid = int(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int slab = warp % row_slabs, half = warp / row_slabs;
  const int64_t kh = h / (a.value_heads / a.key_heads);
  const chunk_place place = locate_chunk(a.runs, c);
  const int64_t t0 = place.t0;
  const int rows = place.rows;
  uint32_t* record = records + (int64_t(h) * chunks + c) * record_words;

  for (int e = tid; e < chunk * head_dim / 4; e += threads) {  // q, k rows; padding rows 0
    const int r = e / (head_dim / 4), d = (e % (head_dim / 4)) * 4;
    const float* row = a.qkv + (t0 + min(r, rows - 1)) * a.ld + kh * head_dim + d;
    copy16_async(q_s + r * wide_stride + d, row + a.q_offset, r < rows);
    copy16_async(k_s + r * wide_stride + d, row + a.k_offset, r < rows);
  }
  async_commit();
  if (tid < chunk) {  // padding: g = 0, beta = 0
    gamma_s[tid] = tid < rows ? a.log_decay[(t0 + tid) * a.value_heads + h] : 0.0f;
    beta_s[tid] = tid < rows ? a.beta[(t0 + tid) * a.value_heads + h] : 0.0f;
  }
  __syncthreads();
  if (tid < 32) {  // inclusive prefix sum of g, two values per lane
    const float first = gamma_s[2 * tid], second = gamma_s[2 * tid + 1];
    float sum = first + second;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const float below = __shfl_up_sync(0xffffffffu, sum, offset);
      if (tid >= offset) sum += below;
    }
    float before = __shfl_up_sync(0xffffffffu, sum, 1);
    if (tid == 0) before = 0.0f;
    gamma_s[2 * tid] = before + first;
    gamma_s[2 * tid + 1] = before + first + second;
  }
  __syncthreads();
  if (tid < chunk) {
    rise_s[tid] = expf(gamma_s[tid]);
    fall_s[tid] = expf(gamma_s[chunk - 1] - gamma_s[tid]);
    reinterpret_cast<float*>(record + gamma_at)[tid] = gamma_s[tid];
  }
  async_wait<0>();
  __syncthreads();

  // q.k and k.k for this warp's rows i and its half of the columns j: P (to the record) and -A
  // (kept in registers until q is no longer needed).
  float qk[4][4] = {}, kk[4][4] = {};
  const int last_tile = 2 * slab + 1;  // columns 8 n .. with n <= last_tile reach j <= i
  if (4 * half <= last_tile) {  // warp-uniform: else every column of the half is above i
#pragma unroll
    for (int k = 0; k < head_dim / 16; ++k) {
      const a_split q_rows = split_a_rows(q_s, wide_stride, 16 * slab, 16 * k);
      const a_split k_rows = split_a_rows(k_s, wide_stride, 16 * slab, 16 * k);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int n = 4 * half + m;
        if (n > last_tile) continue;
        const uint4 keys = split_b_along_rows(k_s, wide_stride, 8 * n, 16 * k);
        mma_split(qk[m], q_rows, keys);
        mma_split(kk[m], k_rows, keys);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 16 * slab + g + (e >= 2 ? 8 : 0), j = 8 * (4 * half + m) + 2 * t + (e & 1);
      const float dec = j <= i ? expf(gamma_s[i] - gamma_s[j]) : 0.0f;
      qk[m][e] *= dec;
      kk[m][e] = j < i ? -beta_s[i] * kk[m][e] * dec : 0.0f;
    }
  store_accumulator_fragments(record + p_at, 4, 2 * half, qk[0], qk[1]);
  store_accumulator_fragments(record + p_at, 4, 2 * half + 1, qk[2], qk[3]);
  __syncthreads();  // q and k are read

  // The state kernel's operands that need nothing more: e^G q and e^(G63 - G) k.
  store_fragments(record + q_at, 64, [&](int f) {
    const int n0 = 8 * (f / 8);
    return split_b_along_rows(q_s, wide_stride, n0, 16 * (f % 8), rise_s[n0 + lane / 4]);
  });
  store_fragments(record + kd_at, 64, [&](int f) {
    return split_b_down_columns(k_s, wide_stride, 8 * (f / 4), 16 * (f % 4), fall_s);
  });
  __syncthreads();  // q is no longer needed: -A over it

#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int i = 16 * slab + g, j = 8 * (4 * half + m) + 2 * t;
    *reinterpret_cast<float2*>(t_s + i * square_stride + j) = make_float2(kk[m][0], kk[m][1]);
    *reinterpret_cast<float2*>(t_s + (i + 8) * square_stride + j) = make_float2(kk[m][2], kk[m][3]);
  }
  for (int e = tid; e < chunk * head_dim; e += threads) {  // k -> beta e^G k in place
    const int r = e / head_dim, d = e % head_dim;
    k_s[r * wide_stride + d] *= beta_s[r] * rise_s[r];
  }
  invert_unit_lower(t_s, scratch_s);  // t_s = (I + A)^-1; synchronises

  float acc[8][4];
  lower_times(t_s, k_s, acc);  // Wc, straight to the record
#pragma unroll
  for (int n = 0; n < 8; n += 2)
    store_accumulator_fragments(record + wc_at, 8, 4 * half + n / 2, acc[n], acc[n + 1]);
  __syncthreads();  // beta e^G k is read
  for (int e = tid; e < chunk * head_dim / 4; e += threads) {  // beta v over beta e^G k
    const int r = e / (head_dim / 4), d = (e % (head_dim / 4)) * 4;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < rows)
      v = *reinterpret_cast<const float4*>(a.qkv + (t0 + r) * a.ld + a.v_offset +
                                           int64_t(h) * head_dim + d);
    const float b = beta_s[r];
    *reinterpret_cast<float4*>(k_s + r * wide_stride + d) =
        make_float4(v.x * b, v.y * b, v.z * b, v.w * b);
  }
  __syncthreads();
  lower_times(t_s, k_s, acc);  // Uc, straight to the record
  float* uc = reinterpret_cast<float*>(record + uc_at);
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int i = 16 * slab + g, j = 64 * half + 8 * n + 2 * t;
    *reinterpret_cast<float2*>(uc + i * head_dim + j) = make_float2(acc[n][0], acc[n][1]);
    *reinterpret_cast<float2*>(uc + (i + 8) * head_dim + j) = make_float2(acc[n][2], acc[n][3]);
  }
}

// q (64 rows of wide_stride) fits in the two squares that later hold -A and the scratch.
static_assert(chunk * wide_stride <= 2 * chunk * square_stride);
constexpr size_t shared_bytes =
    sizeof(float) * (2 * chunk * square_stride + chunk * wide_stride + 4 * chunk);

}  // namespace

void launch_prepare(const delta_rule_args& args, int64_t chunks, uint32_t* records,
                    cudaStream_t stream) {
  static const bool configured =
      (allow_dynamic_shared(reinterpret_cast<const void*>(prepare_kernel), shared_bytes,
                            "gated_delta_rule (prepare)"),
       true);
  (void)configured;
  prepare_kernel<<<dim3(unsigned(chunks), unsigned(args.value_heads)), threads, shared_bytes,
                   stream>>>(args, chunks, records);
  check_launch("gated_delta_rule (prepare)");
}

}  // namespace cua_s1::kernels::delta_rule
