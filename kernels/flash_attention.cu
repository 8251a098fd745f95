// Flash attention on tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate): a block of 4
// warps owns 4 x 16 x m_tiles queries of one head of one run; K/V tiles stream through
// double-buffered shared memory by cp.async (rows past the end zero-filled); each warp keeps its
// 16 x m_tiles query rows' Q fragments, running max, sum and fp32 output in registers (head size
// 64 takes two m16 tiles a warp: every K/V fragment read from shared memory serves 32 rows).
#include <stdexcept>
#include <string>

#include "kernels/attention_common.cuh"
#include "kernels/common.cuh"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_attention_testing.hpp"
#include "kernels/flash_attention_wgmma.hpp"

namespace cua_s1::kernels {
namespace {

constexpr int warps_per_block = 4;
constexpr int block_threads = warps_per_block * 32;
constexpr int row_pad = 8;  // bf16 elements: rows 16 bytes apart mod 128, conflict-free ldmatrix

using attention::copies_commit;
using attention::copies_wait;
using attention::copy16;
using attention::shared_address;

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c (16x8 fp32) += a (16x16 bf16, row) * b (16x8 bf16, col).
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}


// rows x D bf16 of one head, starting at token `first`, into a padded shared tile at shared
// address `tile`. Tokens from `split` on are stored `skip` rows further on (a run's own keys
// after the shared prefix); tokens from `tokens` on are zeros. Thread i copies 16 bytes at
// column (i % (D / 8)) * 8 of every (block_threads / (D / 8))-th row; a tile that lies wholly
// in range on one side of `split` takes one 64-bit address computation per thread.
template <int D, int rows>
__device__ __forceinline__ void load_tile(uint32_t tile, const bf16* head, int64_t ld,
                                          int64_t first, int64_t tokens, int64_t split = 0,
                                          int64_t skip = 0) {
  constexpr int chunks_per_row = D / 8, rows_per_pass = block_threads / chunks_per_row;
  static_assert(rows % rows_per_pass == 0, "whole passes");
  const int r0 = int(threadIdx.x) / chunks_per_row, column = (int(threadIdx.x) % chunks_per_row) * 8;
  const uint32_t to = tile + uint32_t(r0 * (D + row_pad) + column) * 2;
  constexpr uint32_t pass_bytes = rows_per_pass * (D + row_pad) * 2;
  if (first + rows <= tokens && (first + rows <= split || first >= split)) {
    const bf16* from = head + (first + r0 + (first >= split ? skip : 0)) * ld + column;
    const int64_t pass_ld = rows_per_pass * ld;
#pragma unroll
    for (int i = 0; i < rows / rows_per_pass; ++i) copy16(to + i * pass_bytes, from + i * pass_ld, true);
    return;
  }
#pragma unroll
  for (int i = 0; i < rows / rows_per_pass; ++i) {
    const int64_t token = first + r0 + i * rows_per_pass;
    const bool valid = token < tokens;
    const int64_t row = token < split ? token : token + skip;
    copy16(to + i * pass_bytes, valid ? head + row * ld + column : head, valid);
  }
}

// Head size 64 (two m tiles) stays within 255 registers at two blocks per SM.
template <int D, int keys_per_tile, int m_tiles>
__global__ void __launch_bounds__(block_threads, D <= 64 ? 2 : 1)
    flash_attention_kernel(attention_problem p, float scale_log2) {
  constexpr int stride = D + row_pad;
  constexpr int warp_rows = 16 * m_tiles;
  constexpr int block_queries = warps_per_block * warp_rows;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  // Shared addresses: Q [block_queries][stride], then K and V, each [2][keys_per_tile][stride].
  constexpr uint32_t tile_bytes = keys_per_tile * stride * 2;
  const uint32_t q_tile = shared_address(shared_bytes);
  const uint32_t k_tiles = q_tile + block_queries * stride * 2;
  const uint32_t v_tiles = k_tiles + 2 * tile_bytes;

  const int head = int(blockIdx.y);
  const int kv_head = head / int(p.q_heads / p.kv_heads);
  // This block's run: its query rows, and its keys (the shared prefix, then its own rows).
  const int64_t run_first = run_bound(p.runs, int(blockIdx.z));
  const int64_t tokens = run_bound(p.runs, int(blockIdx.z) + 1) - run_first;
  // Causal blocks late in the prompt do the most work: start them first.
  const int64_t q0 = int64_t(gridDim.x - 1 - blockIdx.x) * block_queries;
  if (q0 >= tokens) return;  // a run shorter than the longest
  const int64_t offset = p.keys;  // prefix keys before the run's first query
  const int64_t keys = offset + tokens;
  const bf16* q_head = p.q + run_first * p.ldq + head * D;
  const bf16* k_head = p.k + kv_head * D;
  const bf16* v_head = p.v + kv_head * D;
  const int64_t key_end = p.causal ? min(keys, offset + q0 + block_queries) : keys;
  const int tiles = int((key_end + keys_per_tile - 1) / keys_per_tile);

  load_tile<D, block_queries>(q_tile, q_head, p.ldq, q0, tokens);
  load_tile<D, keys_per_tile>(k_tiles, k_head, p.ldk, 0, keys, offset, run_first);
  load_tile<D, keys_per_tile>(v_tiles, v_head, p.ldv, 0, keys, offset, run_first);
  copies_commit();

  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int group = lane >> 2, quad = lane & 3, matrix = lane >> 3;
  const int64_t warp_first_row = q0 + warp * warp_rows;
  // This lane's ldmatrix addresses (bytes), before the m-tile / k-step / key / column offsets.
  const uint32_t q_lane = q_tile + uint32_t((warp * warp_rows + (lane & 7) + (matrix & 1) * 8) * stride +
                                            (matrix >> 1) * 8) * 2;
  const uint32_t k_lane = uint32_t(((lane & 7) + (matrix >> 1) * 8) * stride + (matrix & 1) * 8) * 2;
  const uint32_t v_lane = uint32_t(((lane & 7) + (matrix & 1) * 8) * stride + (matrix >> 1) * 8) * 2;
  const int64_t warp_last_row = offset + warp_first_row + warp_rows - 1;  // as a key index

  uint32_t qf[m_tiles][D / 16][4];  // Q fragments, loaded once the first tiles are in
  float o[m_tiles][D / 8][4];
  // Per m tile, rows group and group + 8: the running max of the scaled scores and the sum.
  float running_max[m_tiles][2], running_sum[m_tiles][2];
#pragma unroll
  for (int m = 0; m < m_tiles; ++m) {
#pragma unroll
    for (int d = 0; d < D / 8; ++d) o[m][d][0] = o[m][d][1] = o[m][d][2] = o[m][d][3] = 0.0f;
    running_max[m][0] = running_max[m][1] = -INFINITY;
    running_sum[m][0] = running_sum[m][1] = 0.0f;
  }

  for (int t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) {
      const int next = (t + 1) & 1;
      const int64_t first = int64_t(t + 1) * keys_per_tile;
      load_tile<D, keys_per_tile>(k_tiles + next * tile_bytes, k_head, p.ldk, first, keys,
                                  offset, run_first);
      load_tile<D, keys_per_tile>(v_tiles + next * tile_bytes, v_head, p.ldv, first, keys,
                                  offset, run_first);
      copies_commit();
      copies_wait<1>();
    } else {
      copies_wait<0>();
    }
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int m = 0; m < m_tiles; ++m)
#pragma unroll
        for (int kk = 0; kk < D; kk += 16) ldmatrix_x4(qf[m][kk / 16], q_lane + (m * 16 * stride + kk) * 2);
    }
    const uint32_t k_tile = k_tiles + (t & 1) * tile_bytes + k_lane;
    const uint32_t v_tile = v_tiles + (t & 1) * tile_bytes + v_lane;
    const int64_t key0 = int64_t(t) * keys_per_tile;
    if (!p.causal || key0 <= warp_last_row) {  // warp-uniform: else every score is masked
      float s[m_tiles][keys_per_tile / 8][4];
#pragma unroll
      for (int m = 0; m < m_tiles; ++m)
#pragma unroll
        for (int n = 0; n < keys_per_tile / 8; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D; kk += 16) {
#pragma unroll
        for (int n = 0; n < keys_per_tile; n += 16) {
          uint32_t b[4];
          ldmatrix_x4(b, k_tile + uint32_t(n * stride + kk) * 2);
#pragma unroll
          for (int m = 0; m < m_tiles; ++m) {
            mma(s[m][n / 8], qf[m][kk / 16], b[0], b[1]);
            mma(s[m][n / 8 + 1], qf[m][kk / 16], b[2], b[3]);
          }
        }
      }

      // Raw scores here; the scale (> 0) joins in the exponent's FMA. Masked scores are -inf.
      // Warp-uniform: every key of the tile exists and (causal) precedes the warp's first row.
      const bool all_visible = key0 + keys_per_tile <= keys &&
                               (!p.causal || key0 + keys_per_tile - 1 <= offset + warp_first_row);
      float alpha[m_tiles][2];
#pragma unroll
      for (int m = 0; m < m_tiles; ++m) {
        if (!all_visible) {
#pragma unroll
          for (int n = 0; n < keys_per_tile / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int64_t key = key0 + n * 8 + quad * 2 + (e & 1);
              const int64_t row = warp_first_row + m * 16 + group + (e >> 1) * 8;
              const bool visible = key < keys && (!p.causal || key <= offset + row);
              s[m][n][e] = visible ? s[m][n][e] : -INFINITY;
            }
        }
        attention::softmax_step(s[m], running_max[m], running_sum[m], alpha[m], scale_log2);
        attention::rescale_rows(o[m], alpha[m]);
      }
#pragma unroll
      for (int j = 0; j < keys_per_tile / 16; ++j) {
        uint32_t a[m_tiles][4];
#pragma unroll
        for (int m = 0; m < m_tiles; ++m) attention::probability_fragment(s[m], j, a[m]);
#pragma unroll
        for (int d = 0; d < D; d += 16) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, v_tile + uint32_t(j * 16 * stride + d) * 2);
#pragma unroll
          for (int m = 0; m < m_tiles; ++m) {
            mma(o[m][d / 8], a[m], b[0], b[1]);
            mma(o[m][d / 8 + 1], a[m], b[2], b[3]);
          }
        }
      }
    }
    __syncthreads();  // the next iteration's copies overwrite this buffer
  }

#pragma unroll
  for (int m = 0; m < m_tiles; ++m)
    attention::store_rows<D>(p, o[m], running_sum[m], warp_first_row + m * 16 + group, tokens,
                             run_first, head);
}

template <int D, int keys_per_tile, int m_tiles>
void launch(const attention_problem& p, cudaStream_t stream) {
  constexpr int block_queries = warps_per_block * 16 * m_tiles;
  constexpr size_t shared_bytes =
      size_t(block_queries + 4 * keys_per_tile) * (D + row_pad) * sizeof(bf16);
  static const cudaError_t configured = cudaFuncSetAttribute(
      flash_attention_kernel<D, keys_per_tile, m_tiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      int(shared_bytes));
  if (configured != cudaSuccess)
    throw std::runtime_error(std::string("flash_attention: shared memory: ") +
                             cudaGetErrorString(configured));
  const dim3 grid(unsigned((p.runs.longest() + block_queries - 1) / block_queries),
                  unsigned(p.q_heads), unsigned(p.runs.count));
  flash_attention_kernel<D, keys_per_tile, m_tiles><<<grid, block_threads, shared_bytes, stream>>>(
      p, p.scale * 1.4426950408889634f);
  check_launch("flash_attention");
}

bool aligned(const void* pointer, size_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

bool supported_head_dim(int64_t head_dim) { return head_dim == 64 || head_dim == 256; }

// `problem` checked, with its runs set and `keys` counting the prefix keys every run sees
// before its own.
attention_problem normalised(const attention_problem& problem) {
  attention_problem p = problem;
  if (p.runs.count == 0) {  // one sequence: its queries are the last `tokens` of the keys
    if (p.keys == 0) p.keys = p.tokens;
    if (p.keys < p.tokens)
      throw std::invalid_argument("flash_attention: fewer keys than queries");
    p.keys -= p.tokens;
    p.runs = single_run(p.tokens);
  } else if (p.runs.count > max_runs || p.runs.rows() != p.tokens || p.keys < 0) {
    throw std::invalid_argument("flash_attention: runs do not cover the queries");
  }
  if (!supported_head_dim(p.head_dim))
    throw std::invalid_argument("flash_attention: head_dim " + std::to_string(p.head_dim) +
                                " is not supported (64 or 256)");
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0)
    throw std::invalid_argument("flash_attention: q heads must be a multiple of kv heads");
  if (!(p.scale > 0.0f))  // the kernel takes row maxima before scaling
    throw std::invalid_argument("flash_attention: the scale must be positive");
  if (!p.out == !p.out_bf16)
    throw std::invalid_argument("flash_attention: give one of out and out_bf16");
  if (p.ldq % 8 || p.ldk % 8 || p.ldv % 8 || p.ldo % 2 || !aligned(p.q, 16) ||
      !aligned(p.k, 16) || !aligned(p.v, 16) || !aligned(p.out, 8) || !aligned(p.out_bf16, 4))
    throw std::invalid_argument("flash_attention: operands must be 16-byte aligned rows");
  return p;
}

// The portable mma.sync kernel on a normalised problem.
void launch_portable(const attention_problem& p, cudaStream_t stream) {
  if (p.head_dim == 64)
    launch<64, 64, 2>(p, stream);
  else
    launch<256, 32, 1>(p, stream);
}

}  // namespace

void flash_attention(const attention_problem& problem, cudaStream_t stream) {
  if (problem.tokens == 0) return;
  const attention_problem p = normalised(problem);
  if (flash_attention_wgmma_applies(p))
    flash_attention_wgmma(p, stream);
  else
    launch_portable(p, stream);
}

void flash_attention_portable(const attention_problem& problem, cudaStream_t stream) {
  if (problem.tokens == 0) return;
  launch_portable(normalised(problem), stream);
}

}  // namespace cua_s1::kernels
