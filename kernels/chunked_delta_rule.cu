// The chunked gated delta rule (spec/model.md 4.4 step 5) in fp32, two kernels:
//  - prepare, one block per (chunk, value head), the chunks of every run at once (counted run
//    after run): the in-chunk cumulative log decay Gamma, P = (q.k) Dec (j <= i), the
//    unit-lower-triangular (I + A)^-1 by forward substitution, Uc = (I + A)^-1 (beta V) and
//    Wc = (I + A)^-1 (beta e^Gamma K);
//  - state, one block per (value head, 32 value columns, run), chunk after chunk: Vnew = Uc - Wc S,
//    O = (e^Gamma Q) S + P Vnew, S <- e^Gamma_63 S + (e^(Gamma_63 - Gamma) K)^T Vnew, with the
//    state's columns in shared memory.
#include <stdexcept>
#include <string>

#include "kernels/common.cuh"
#include "kernels/gated_deltanet.hpp"

namespace cua_s1::kernels {
namespace {

constexpr int chunk = int(delta_rule_chunk);
constexpr int block_threads = 256;
constexpr int head_dim = 128;       // key_dim = value_dim
constexpr int state_columns = 32;   // value columns per state block
constexpr int row_stride = head_dim + 4;  // float4-aligned rows, 4 banks apart
constexpr int square_stride = chunk + 1;

// Where the prepare kernel leaves its results for the state kernel.
struct chunk_scratch {
  float* gamma;  // [value_heads][chunks * 64]
  float* uc;     // [value_heads][chunks * 64][value_dim]
  float* wc;     // [value_heads][chunks * 64][key_dim]
  float* p;      // [value_heads][chunks][64][64]
};

chunk_scratch split_scratch(float* scratch, int64_t chunks, int64_t value_heads) {
  const int64_t rows = value_heads * chunks * chunk;
  chunk_scratch s;
  s.gamma = scratch;
  s.uc = s.gamma + rows;
  s.wc = s.uc + rows * head_dim;
  s.p = s.wc + rows * head_dim;
  return s;
}

int64_t chunks_of(int64_t rows) { return (rows + chunk - 1) / chunk; }

// Where chunk `c` (counted over all runs, each run's chunks in order) lies.
struct chunk_place {
  int64_t t0;  // its first row
  int rows;    // its rows (the last chunk of a run may be short)
};
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

__device__ __forceinline__ float4 load4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float2 load2(const float* p) {
  return *reinterpret_cast<const float2*>(p);
}
__device__ __forceinline__ float lane_of(const float4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

// out[i][d] = sum_m w[i][m] x[m][d] for the 64 rows and 128 columns (w lower triangular).
__device__ __forceinline__ void lower_product(const float* w, const float* x, float* out,
                                              int64_t ld_out) {
  const int tx = int(threadIdx.x % 32), ty = int(threadIdx.x / 32);
  float acc[8][head_dim / 32] = {};
  for (int m = 0; m < chunk; ++m) {
    float xm[head_dim / 32];
#pragma unroll
    for (int dd = 0; dd < head_dim / 32; ++dd) xm[dd] = x[m * row_stride + tx + 32 * dd];
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const float wim = w[(ty + 8 * ii) * square_stride + m];
#pragma unroll
      for (int dd = 0; dd < head_dim / 32; ++dd) acc[ii][dd] += wim * xm[dd];
    }
  }
#pragma unroll
  for (int ii = 0; ii < 8; ++ii)
#pragma unroll
    for (int dd = 0; dd < head_dim / 32; ++dd)
      out[(ty + 8 * ii) * ld_out + tx + 32 * dd] = acc[ii][dd];
}

// X = (I - L)^-1 for the strictly lower 64 x 64 L in w (= -A), in blocks of 16: the four
// diagonal blocks X_bb = (I - L_bb)^-1 by forward substitution, one warp each, then the blocks
// below them by distance d = 1, 2, 3: X_ij = X_ii sum_{k=j}^{i-1} L_ik X_kj. X is built in
// `scratch` (64 rows of square_stride floats) and copied over w. Six barriers instead of two per
// row.
__device__ __forceinline__ void invert_unit_lower(float* w, float* scratch) {
  constexpr int block = 16;
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  for (int e = tid; e < chunk * square_stride; e += block_threads) scratch[e] = 0.0f;
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
  constexpr int per_thread = (chunk / block - 1) * block * block / block_threads;  // 3
  for (int d = 1; d < chunk / block; ++d) {
    const int outputs = (chunk / block - d) * block * block;
    float value[per_thread];
    __syncthreads();  // the blocks at distance < d are final
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {  // S = sum_k L_ik X_kj
      const int idx = tid + o * block_threads;
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
      const int idx = tid + o * block_threads;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      scratch[(i * block + (idx / block) % block) * square_stride + j * block + idx % block] = value[o];
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < per_thread; ++o) {  // X_ij = X_ii S
      const int idx = tid + o * block_threads;
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
      const int idx = tid + o * block_threads;
      if (idx >= outputs) continue;
      const int j = idx / (block * block), i = j + d;
      scratch[(i * block + (idx / block) % block) * square_stride + j * block + idx % block] = value[o];
    }
  }
  __syncthreads();
  for (int e = tid; e < chunk * square_stride; e += block_threads) w[e] = scratch[e];
  __syncthreads();
}

__global__ void __launch_bounds__(block_threads)
    prepare_kernel(delta_rule_args a, int64_t chunks, chunk_scratch out) {
  extern __shared__ __align__(16) float shared[];
  float* k_s = shared;                       // [64][row_stride] k_hat
  float* x_s = k_s + chunk * row_stride;     // [64][row_stride] q_hat, then beta e^G k, beta v
  float* w_s = x_s + chunk * row_stride;     // [64][square_stride] -A, then (I + A)^-1
  float* gamma_s = w_s + chunk * square_stride;
  float* beta_s = gamma_s + chunk;

  const int c = int(blockIdx.x), h = int(blockIdx.y), tid = int(threadIdx.x);
  const int64_t kh = h / (a.value_heads / a.key_heads);
  const chunk_place place = locate_chunk(a.runs, c);
  const int64_t t0 = place.t0;
  const int rows = place.rows;
  if (tid < chunk) {  // padding: g = 0, beta = 0
    gamma_s[tid] = tid < rows ? a.log_decay[(t0 + tid) * a.value_heads + h] : 0.0f;
    beta_s[tid] = tid < rows ? a.beta[(t0 + tid) * a.value_heads + h] : 0.0f;
  }
  for (int e = tid; e < chunk * head_dim; e += block_threads) {
    const int r = e / head_dim, d = e % head_dim;
    const float* row = a.qkv + (t0 + r) * a.ld + kh * head_dim + d;
    k_s[r * row_stride + d] = r < rows ? row[a.k_offset] : 0.0f;
    x_s[r * row_stride + d] = r < rows ? row[a.q_offset] : 0.0f;
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

  {  // q.k and k.k over the chunk: rows ty + 16 ii, columns tx + 16 jj
    const int tx = tid % 16, ty = tid / 16;
    float qk[4][4] = {}, kk[4][4] = {};
    for (int d = 0; d < head_dim; d += 4) {
      float4 qi[4], ki[4], kj[4];
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        qi[n] = load4(x_s + (ty + 16 * n) * row_stride + d);
        ki[n] = load4(k_s + (ty + 16 * n) * row_stride + d);
        kj[n] = load4(k_s + (tx + 16 * n) * row_stride + d);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int ii = 0; ii < 4; ++ii)
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            qk[ii][jj] += lane_of(qi[ii], k) * lane_of(kj[jj], k);
            kk[ii][jj] += lane_of(ki[ii], k) * lane_of(kj[jj], k);
          }
    }
    float* p = out.p + (int64_t(h) * chunks + c) * chunk * chunk;
#pragma unroll
    for (int ii = 0; ii < 4; ++ii)
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int i = ty + 16 * ii, j = tx + 16 * jj;
        const float dec = j <= i ? expf(gamma_s[i] - gamma_s[j]) : 0.0f;
        p[i * chunk + j] = qk[ii][jj] * dec;
        w_s[i * square_stride + j] = j < i ? -beta_s[i] * kk[ii][jj] * dec : 0.0f;
      }
  }
  __syncthreads();

  invert_unit_lower(w_s, x_s);  // w_s = (I + A)^-1; x_s (free until the next step) as scratch
  for (int e = tid; e < chunk * head_dim; e += block_threads) {
    const int r = e / head_dim, d = e % head_dim;
    x_s[r * row_stride + d] = k_s[r * row_stride + d] * beta_s[r] * expf(gamma_s[r]);
  }
  __syncthreads();
  const int64_t first_row = int64_t(h) * chunks * chunk + int64_t(c) * chunk;
  lower_product(w_s, x_s, out.wc + first_row * head_dim, head_dim);
  __syncthreads();
  for (int e = tid; e < chunk * head_dim; e += block_threads) {
    const int r = e / head_dim, d = e % head_dim;
    x_s[r * row_stride + d] =
        r < rows ? a.qkv[(t0 + r) * a.ld + a.v_offset + int64_t(h) * head_dim + d] * beta_s[r] : 0.0f;
  }
  __syncthreads();
  lower_product(w_s, x_s, out.uc + first_row * head_dim, head_dim);
  if (tid < chunk) out.gamma[first_row + tid] = gamma_s[tid];
}

// State-kernel tiles, float4-readable rows: x [64][132] (Wc, e^G q, e^(G63-G) k), s [128][32],
// v [64][32] (Uc, then Vnew), p [64][68].
constexpr int p_stride = chunk + 4;

// acc[a][b] += sum_k x[row0 + a][k] y[k][col + b] over k < depth (4 rows x 2 columns; x rows
// `x_ld` apart, y rows state_columns apart).
template <int depth, int x_ld>
__device__ __forceinline__ void tile_product(const float* x, const float* y, int row0, int col,
                                             float (&acc)[4][2]) {
  for (int r = 0; r < depth; r += 4) {
    float4 xa[4];
#pragma unroll
    for (int a = 0; a < 4; ++a) xa[a] = load4(x + (row0 + a) * x_ld + r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 yv = load2(y + (r + k) * state_columns + col);
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        acc[a][0] += lane_of(xa[a], k) * yv.x;
        acc[a][1] += lane_of(xa[a], k) * yv.y;
      }
    }
  }
}

// One thread's share of a [64][128] fp32 tile: global loads issued ahead of use into registers
// (a warp reads whole 512-byte rows), stored to shared memory scaled per row when needed.
struct tile_fetch {
  static constexpr int count = chunk * head_dim / 4 / block_threads;
  float4 v[count];

  // Rows past `valid` are 0.
  __device__ __forceinline__ void fetch(const float* source, int64_t ld, int valid) {
#pragma unroll
    for (int i = 0; i < count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      const int r = e / (head_dim / 4), d = (e % (head_dim / 4)) * 4;
      v[i] = r < valid ? load4(source + r * ld + d) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }

  template <class Scale>
  __device__ __forceinline__ void store(float* x, Scale scale) const {
#pragma unroll
    for (int i = 0; i < count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      const int r = e / (head_dim / 4), d = (e % (head_dim / 4)) * 4;
      const float f = scale(r);
      *reinterpret_cast<float4*>(x + r * row_stride + d) =
          make_float4(v[i].x * f, v[i].y * f, v[i].z * f, v[i].w * f);
    }
  }
};

// What the prepare kernel left for one chunk and this block's columns: Wc, the Uc slice, P and
// Gamma, fetched into registers while the previous chunk is still being computed.
struct chunk_fetch {
  static constexpr int uc_count = chunk * state_columns / 2 / block_threads;
  static constexpr int p_count = chunk * chunk / 4 / block_threads;
  tile_fetch wc;
  float2 uc[uc_count];
  float4 p[p_count];
  float gamma;

  __device__ __forceinline__ void fetch(const chunk_scratch& in, int64_t chunks, int h, int64_t c,
                                        int column0) {
    const int64_t first_row = int64_t(h) * chunks * chunk + c * chunk;
    wc.fetch(in.wc + first_row * head_dim, head_dim, chunk);
#pragma unroll
    for (int i = 0; i < uc_count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      const int r = e / (state_columns / 2), c2 = (e % (state_columns / 2)) * 2;
      uc[i] = load2(in.uc + (first_row + r) * head_dim + column0 + c2);
    }
    const float* source = in.p + (int64_t(h) * chunks + c) * chunk * chunk;
#pragma unroll
    for (int i = 0; i < p_count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      p[i] = load4(source + (e / (chunk / 4)) * chunk + (e % (chunk / 4)) * 4);
    }
    gamma = threadIdx.x < chunk ? in.gamma[first_row + threadIdx.x] : 0.0f;
  }

  __device__ __forceinline__ void store(float* x_s, float* v_s, float* p_s, float* gamma_s) const {
    wc.store(x_s, [](int) { return 1.0f; });
#pragma unroll
    for (int i = 0; i < uc_count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      const int r = e / (state_columns / 2), c2 = (e % (state_columns / 2)) * 2;
      *reinterpret_cast<float2*>(v_s + r * state_columns + c2) = uc[i];
    }
#pragma unroll
    for (int i = 0; i < p_count; ++i) {
      const int e = int(threadIdx.x) + i * block_threads;
      *reinterpret_cast<float4*>(p_s + (e / (chunk / 4)) * p_stride + (e % (chunk / 4)) * 4) = p[i];
    }
    if (threadIdx.x < chunk) gamma_s[threadIdx.x] = gamma;
  }
};

// Each chunk's global inputs are fetched into registers one phase before they are needed (Wc,
// Uc, P, Gamma during the previous chunk's state update, q during Vnew, k during O), so the
// serial walk over the chunks does not wait on memory latency.
__global__ void __launch_bounds__(block_threads)
    state_kernel(delta_rule_args a, int64_t chunks, chunk_scratch in) {
  extern __shared__ __align__(16) float shared[];
  float* s_s = shared;                          // [128][32] state columns
  float* x_s = s_s + head_dim * state_columns;  // [64][row_stride]
  float* v_s = x_s + chunk * row_stride;          // [64][32]
  float* p_s = v_s + chunk * state_columns;     // [64][p_stride]
  float* gamma_s = p_s + chunk * p_stride;

  const int h = int(blockIdx.x), column0 = int(blockIdx.y) * state_columns;
  const int tid = int(threadIdx.x);
  // This block's run: its rows and where its chunks start among all runs' chunks.
  const int run = int(blockIdx.z);
  const int64_t first_chunk = first_chunk_of(a.runs, run);
  const int64_t run_first = run_bound(a.runs, run), run_end = run_bound(a.runs, run + 1);
  const int64_t run_chunks = (run_end - run_first + chunk - 1) / chunk;
  const int col = 2 * (tid % 16);  // this thread's two columns of the slice
  const int group = tid / 16;      // rows 4 group .. (Vnew, O) and 8 group .. (S)
  const int64_t kh = h / (a.value_heads / a.key_heads);
  const int64_t state_column0 = int64_t(h) * head_dim + column0;
  chunk_fetch next;
  next.fetch(in, chunks, h, first_chunk, column0);
  for (int e = tid; e < head_dim * state_columns; e += block_threads) {
    const int r = e / state_columns, c = e % state_columns;
    s_s[e] = a.state_in ? a.state_in[(state_column0 + c) * head_dim + r] : 0.0f;
  }
  const int64_t out_ld = a.value_heads * head_dim;
  tile_fetch rows_fetch;  // q, then k of the current chunk
  for (int64_t c = 0; c < run_chunks; ++c) {
    const int64_t t0 = run_first + c * chunk;
    const int rows = int(min(int64_t(chunk), run_end - t0));
    __syncthreads();  // the previous chunk is done with every buffer
    next.store(x_s, v_s, p_s, gamma_s);
    rows_fetch.fetch(a.qkv + t0 * a.ld + a.q_offset + kh * head_dim, a.ld, rows);
    __syncthreads();

    float vnew[4][2];  // Vnew = Uc - Wc S
    {
      float product[4][2] = {};
      tile_product<head_dim, row_stride>(x_s, s_s, 4 * group, col, product);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float2 uc = load2(v_s + (4 * group + r) * state_columns + col);
        vnew[r][0] = uc.x - product[r][0];
        vnew[r][1] = uc.y - product[r][1];
      }
    }
    __syncthreads();  // Wc and Uc are read
#pragma unroll
    for (int r = 0; r < 4; ++r)
      *reinterpret_cast<float2*>(v_s + (4 * group + r) * state_columns + col) =
          make_float2(vnew[r][0], vnew[r][1]);
    rows_fetch.store(x_s, [&](int r) { return expf(gamma_s[r]); });
    rows_fetch.fetch(a.qkv + t0 * a.ld + a.k_offset + kh * head_dim, a.ld, rows);
    __syncthreads();

    {  // O = (e^G q) S + P Vnew
      float o[4][2] = {};
      tile_product<head_dim, row_stride>(x_s, s_s, 4 * group, col, o);
      tile_product<chunk, p_stride>(p_s, v_s, 4 * group, col, o);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * group + r;
        if (i < rows)
          *reinterpret_cast<float2*>(a.out + (t0 + i) * out_ld + state_column0 + col) =
              make_float2(o[r][0], o[r][1]);
      }
    }
    __syncthreads();
    const float last = gamma_s[chunk - 1];
    rows_fetch.store(x_s, [&](int r) { return expf(last - gamma_s[r]); });
    if (c + 1 < run_chunks) next.fetch(in, chunks, h, first_chunk + c + 1, column0);
    __syncthreads();
    {  // S <- e^G63 S + (e^(G63 - G) k)^T Vnew, rows 8 group .. + 7
      const float decay = expf(last);
      float acc[8][2];
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const float2 sv = load2(s_s + (8 * group + r) * state_columns + col);
        acc[r][0] = sv.x * decay;
        acc[r][1] = sv.y * decay;
      }
      for (int m = 0; m < chunk; ++m) {
        const float4 k0 = load4(x_s + m * row_stride + 8 * group);
        const float4 k1 = load4(x_s + m * row_stride + 8 * group + 4);
        const float2 vv = load2(v_s + m * state_columns + col);
        const float k[8] = {k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w};
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          acc[r][0] += k[r] * vv.x;
          acc[r][1] += k[r] * vv.y;
        }
      }
#pragma unroll
      for (int r = 0; r < 8; ++r)
        *reinterpret_cast<float2*>(s_s + (8 * group + r) * state_columns + col) =
            make_float2(acc[r][0], acc[r][1]);
    }
  }
  if (a.state_out) {
    __syncthreads();
    for (int e = tid; e < head_dim * state_columns; e += block_threads) {
      const int r = e / state_columns, c = e % state_columns;
      a.state_out[(state_column0 + c) * head_dim + r] = s_s[e];
    }
  }
}

constexpr size_t prepare_shared_bytes =
    sizeof(float) * (2 * chunk * row_stride + chunk * square_stride + 2 * chunk);
constexpr size_t state_shared_bytes =
    sizeof(float) * (head_dim * state_columns + chunk * row_stride + chunk * state_columns +
                     chunk * p_stride + chunk);

void allow_shared(const void* kernel, size_t bytes, const char* name) {
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(name) + ": shared memory: " + cudaGetErrorString(status));
}

int64_t total_chunks(const row_runs& runs) {
  int64_t chunks = 0;
  for (int r = 0; r < runs.count; ++r) chunks += chunks_of(runs.length(r));
  return chunks;
}

}  // namespace

size_t delta_rule_scratch_floats(const row_runs& runs, int64_t value_heads, int64_t key_dim,
                                 int64_t value_dim) {
  const int64_t chunks = total_chunks(runs);
  return size_t(value_heads * chunks * (chunk * (1 + key_dim + value_dim) + chunk * chunk));
}

void gated_delta_rule(const delta_rule_args& arguments, cudaStream_t stream) {
  delta_rule_args args = arguments;
  if (args.runs.count == 0) args.runs = single_run(args.tokens);
  if (args.runs.count > max_runs || args.runs.rows() != args.tokens)
    throw std::invalid_argument("gated_delta_rule: runs do not cover the tokens");
  if (args.state_out && args.runs.count != 1)
    throw std::invalid_argument("gated_delta_rule: only a single run can keep its state");
  if (args.tokens == 0) return;
  if (args.key_heads == 0 || args.value_heads % args.key_heads != 0)
    throw std::invalid_argument("gated_delta_rule: value heads must be a multiple of key heads");
  if (args.key_dim != head_dim || args.value_dim != head_dim)
    throw std::invalid_argument("gated_delta_rule: key and value heads must have 128 dims");
  if (!args.scratch) throw std::invalid_argument("gated_delta_rule: no scratch");
  if (args.ld % 4 || args.q_offset % 4 || args.k_offset % 4 || args.v_offset % 4 ||
      reinterpret_cast<uintptr_t>(args.qkv) % 16 || reinterpret_cast<uintptr_t>(args.out) % 8)
    throw std::invalid_argument("gated_delta_rule: q/k/v rows must be 16-byte aligned");
  static const bool configured = [] {
    allow_shared(reinterpret_cast<const void*>(prepare_kernel), prepare_shared_bytes,
                 "gated_delta_rule");
    allow_shared(reinterpret_cast<const void*>(state_kernel), state_shared_bytes,
                 "gated_delta_rule");
    return true;
  }();
  (void)configured;
  const int64_t chunks = total_chunks(args.runs);
  const chunk_scratch scratch = split_scratch(args.scratch, chunks, args.value_heads);
  prepare_kernel<<<dim3(unsigned(chunks), unsigned(args.value_heads)), block_threads,
                   prepare_shared_bytes, stream>>>(args, chunks, scratch);
  check_launch("gated_delta_rule (prepare)");
  state_kernel<<<dim3(unsigned(args.value_heads), unsigned(head_dim / state_columns),
                      unsigned(args.runs.count)),
                 block_threads, state_shared_bytes, stream>>>(args, chunks, scratch);
  check_launch("gated_delta_rule (state)");
}

}  // namespace cua_s1::kernels
