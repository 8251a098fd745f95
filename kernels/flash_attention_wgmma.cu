// Flash attention on Hopper warpgroup MMAs (wgmma, sm_90a) for head size 64 without a causal
// mask: a block of two warpgroups owns 128 queries of one head of one run; each warpgroup keeps
// its 64 rows' Q fragments (the A operand, in registers), online-softmax state and fp32 output
// in registers. K/V tiles of 64 keys stream through three shared-memory stages by cp.async in
// the 128-byte-swizzled layout wgmma reads (K as the K-major B of S = Q K^T, V as the N-major
// B of O += P V); P goes from the S accumulators to bf16 A fragments without touching memory.
// Software-pipelined in each warpgroup: the scores of tile t + 1 and the product P_t V_t are in
// flight together, and the softmax of tile t + 1 runs while P_t V_t is still on the tensor cores.
// Same arithmetic as the mma.sync kernel: fp32 scores and sums, P rounded to bf16 before P V.
#include "kernels/flash_attention_wgmma.hpp"

#include "kernels/attention_common.cuh"
#include "kernels/common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUA_S1_WGMMA_DEVICE 1
#endif

namespace cua_s1::kernels {
namespace {

constexpr int head_dim = 64;  // 128 bytes a row: one swizzle atom wide
constexpr int keys_per_tile = 64;
constexpr uint32_t tile_bytes = keys_per_tile * head_dim * 2;  // 8 KiB
constexpr int warpgroups = 2;
constexpr int block_threads = warpgroups * 128;
constexpr int block_queries = warpgroups * 64;
// Iteration t reads K of tile t + 1 and V of tile t while tile t + 2 comes in (its copies start
// after a block barrier, when both warpgroups are done with tile t - 1, whose stage it takes).
constexpr int stages = 3;
constexpr size_t shared_bytes = 2 * stages * tile_bytes + 1024;  // 1 KiB to align

// Byte offset of 16-byte chunk `chunk` of row `row` in a 128-byte-swizzled tile (1024-byte
// aligned): a row's chunks are permuted by the row's index mod 8, as wgmma's 128B swizzle reads.
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return uint32_t(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// This thread's part of the 64-row tiles of one head's keys (or values), copied tile after
// tile: 16-byte chunk threadIdx % 8 of rows threadIdx / 8 and threadIdx / 8 + 32 of each, into a
// swizzled tile; rows past the run's end become zeros. The state advances by additions only.
struct tile_copier {
  const unsigned char* next;  // the thread's first row of the next tile
  const unsigned char* head;  // a valid address for the zero-filled chunks (nothing is read)
  int64_t half_tile_bytes;    // 32 rows
  int remaining;              // rows from the thread's first row of the next tile to the end
  uint32_t offset[2];         // shared-memory byte offsets of the thread's two chunks

  __device__ __forceinline__ tile_copier(const bf16* head_, int64_t ld, int rows) {
    const int chunk = int(threadIdx.x & 7), row = int(threadIdx.x >> 3);
    head = reinterpret_cast<const unsigned char*>(head_);
    next = head + (row * ld + chunk * 8) * int64_t(sizeof(bf16));
    half_tile_bytes = 32 * ld * int64_t(sizeof(bf16));
    remaining = rows - row;
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) offset[pass] = swizzled(row + pass * 32, chunk);
  }
  // The next tile into `tile`.
  __device__ __forceinline__ void copy_next(uint32_t tile) {
    const unsigned char* second = next + half_tile_bytes;
    attention::copy16(tile + offset[0], remaining > 0 ? next : head, remaining > 0);
    attention::copy16(tile + offset[1], remaining > 32 ? second : head, remaining > 32);
    next = second + half_tile_bytes;
    remaining -= keys_per_tile;
  }
};
static_assert(keys_per_tile * 8 == 2 * block_threads, "two 16-byte chunks a thread a tile");

#ifdef CUA_S1_WGMMA_DEVICE
// A shared-memory matrix descriptor of the tile at shared address 16 `address16` (below 2^14:
// shared memory ends under 256 KiB): 128B swizzle, 8-row groups 1024 bytes apart. (The leading
// offset only matters past one 64-element swizzle atom, which these tiles never span.)
__device__ __forceinline__ uint64_t descriptor(uint32_t address16) {
  return uint64_t(address16) | uint64_t(1024 >> 4) << 16 | uint64_t(1024 >> 4) << 32 |
         uint64_t(1) << 62;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

// Keeps the compiler from moving uses of the accumulators above the wait.
__device__ __forceinline__ void settle(float (&d)[8][4]) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
}

// d (64 x 64 fp32; this warp's 16 rows) (+)= a (64 x 16 bf16, registers) * b (16 x 64, shared
// memory). transpose_b 0: b is stored as 64 rows of 16 k (K-major); 1: as 16 rows of 64 (N-major).
template <int transpose_b>
__device__ __forceinline__ void wgmma_64x64x16(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b,
                                               bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
        "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int(accumulate)),
        "n"(transpose_b));
}

// Lane's two 32-bit pieces (columns 2 quad and 2 quad + 8 of k step kk) of a Q row; zeros past
// the run's end.
__device__ __forceinline__ void q_pieces(const bf16* row, bool valid, int kk, int quad,
                                         uint32_t& low, uint32_t& high) {
  low = valid ? *reinterpret_cast<const uint32_t*>(row + kk * 16 + quad * 2) : 0u;
  high = valid ? *reinterpret_cast<const uint32_t*>(row + kk * 16 + 8 + quad * 2) : 0u;
}

// Scores of the key tile at shared address 16 `k_tile` for this warpgroup's rows: s = Q K^T,
// issued (not waited for).
__device__ __forceinline__ void issue_scores(float (&s)[8][4], const uint32_t (&qf)[4][4],
                                             uint32_t k_tile) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_64x64x16<0>(s, qf[kk], descriptor(k_tile + kk * 32 / 16), kk > 0);
  wgmma_commit();
}

// o += P V of the value tile at shared address 16 `v_tile`, issued (not waited for).
__device__ __forceinline__ void issue_values(float (&o)[8][4], const uint32_t (&pf)[4][4],
                                             uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_64x64x16<1>(o, pf[kk], descriptor(v_tile + kk * 16 * 128 / 16), true);
  wgmma_commit();
}

// Scores of keys past the run's end become -inf.
__device__ __forceinline__ void mask_tail(float (&s)[8][4], int key0, int tokens, int quad) {
  if (key0 + keys_per_tile <= tokens) return;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (key0 + n * 8 + quad * 2 + (e & 1) >= tokens) s[n][e] = -INFINITY;
}
#endif

__global__ void __launch_bounds__(block_threads, 2)
    flash_attention_wgmma_kernel(attention_problem p, float scale_log2) {
#ifdef CUA_S1_WGMMA_DEVICE
  extern __shared__ __align__(1024) unsigned char shared_bytes_[];
  const int head = int(blockIdx.y);
  const int kv_head = head / int(p.q_heads / p.kv_heads);
  const int64_t run_first = run_bound(p.runs, int(blockIdx.z));
  const int tokens = int(run_bound(p.runs, int(blockIdx.z) + 1) - run_first);
  const int q0 = int(blockIdx.x) * block_queries;
  if (q0 >= tokens) return;  // a run shorter than the longest
  tile_copier keys(p.k + run_first * p.ldk + kv_head * head_dim, p.ldk, tokens);
  tile_copier values(p.v + run_first * p.ldv + kv_head * head_dim, p.ldv, tokens);
  const int tiles = (tokens + keys_per_tile - 1) / keys_per_tile;
  // The stages (K tile, V tile right after it) of tiles t, t + 1 and t + 2, in shared address
  // 16-byte units for the descriptors; they rotate after each tile.
  constexpr uint32_t stage16 = 2 * tile_bytes / 16, v16 = tile_bytes / 16;
  uint32_t stage_t = ((attention::shared_address(shared_bytes_) + 1023u) & ~1023u) / 16;
  uint32_t stage_next = stage_t + stage16, stage_after = stage_t + 2 * stage16;
  auto load = [&](int t, uint32_t stage) {  // tile t into `stage`, one (maybe empty) group
    if (t < tiles) {
      keys.copy_next(stage * 16);
      values.copy_next(stage * 16 + tile_bytes);
    }
    attention::copies_commit();
  };
  load(0, stage_t);
  load(1, stage_next);

  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int group = lane >> 2, quad = lane & 3;
  // Warp w holds rows 16 w .. 16 w + 15 of the block's (warpgroup w / 4: 64 w / 4 onwards).
  const int warp_row = q0 + warp * 16;

  uint32_t qf[4][4];  // A fragments of Q: k step kk, rows group / group + 8, low / high columns
  const bf16* q_head = p.q + run_first * p.ldq + head * head_dim;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = warp_row + group + i * 8;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      q_pieces(q_head + row * p.ldq, row < tokens, kk, quad, qf[kk][i], qf[kk][2 + i]);
  }

  float o[8][4] = {};
  float running_max[2] = {-INFINITY, -INFINITY}, running_sum[2] = {0.0f, 0.0f};
  float s[8][4] = {};  // scores, then probabilities, of the newest tile
  uint32_t pf[4][4];   // P of the tile whose P V comes next, as A fragments per 16 keys
  float alpha[2];
  // The newest tile's scores (issued and waited for) into probabilities and the running state.
  auto softmax_of = [&](int t) {
    mask_tail(s, t * keys_per_tile, tokens, quad);
    attention::softmax_step(s, running_max, running_sum, alpha, scale_log2);
  };
  auto take_probabilities = [&] {
#pragma unroll
    for (int j = 0; j < 4; ++j) attention::probability_fragment(s, j, pf[j]);
  };

  attention::copies_wait<1>();  // tile 0 is in
  // The copies were generic-proxy writes; wgmma reads through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  wgmma_fence();
  issue_scores(s, qf, stage_t);
  wgmma_wait<0>();
  settle(s);
  softmax_of(0);  // o is still zero: nothing to rescale
  take_probabilities();
  for (int t = 0; t + 1 < tiles; ++t) {
    attention::copies_wait<0>();  // tile t + 1 is in
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();  // both warpgroups are done with tile t - 1's stage, which t + 2 takes
    load(t + 2, stage_after);
    wgmma_fence();
    issue_scores(s, qf, stage_next);  // s is free: tile t's P is in pf
    issue_values(o, pf, stage_t + v16);
    wgmma_wait<1>();  // the scores are in; P_t V_t may still run
    settle(s);
    softmax_of(t + 1);
    wgmma_wait<0>();
    settle(o);
    attention::rescale_rows(o, alpha);
    take_probabilities();  // pf is free once P_t V_t is done
    const uint32_t done = stage_t;
    stage_t = stage_next;
    stage_next = stage_after;
    stage_after = done;
  }
  // The last tile's P V (its values came in with it).
  wgmma_fence();
  issue_values(o, pf, stage_t + v16);
  wgmma_wait<0>();
  settle(o);
  attention::store_rows<head_dim>(p, o, running_sum, warp_row + group, tokens, run_first, head);
#endif
}

}  // namespace

bool flash_attention_wgmma_applies(const attention_problem& p) {
#ifndef CUA_S1_SM90A
  (void)p;
  return false;
#else
  if (p.head_dim != head_dim || p.causal || p.keys != 0) return false;
  if (p.runs.longest() > (int64_t(1) << 30)) return false;  // the kernel counts rows in int
  // One answer per process: the backend drives one kind of GPU.
  static const bool hopper = [] {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return false;
    return major == 9 && minor == 0;
  }();
  return hopper;
#endif
}

void flash_attention_wgmma(const attention_problem& p, cudaStream_t stream) {
  static const bool configured = [] {  // above the 48 KiB default
    allow_dynamic_shared(reinterpret_cast<const void*>(&flash_attention_wgmma_kernel), shared_bytes,
                         "flash_attention_wgmma");
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned((p.runs.longest() + block_queries - 1) / block_queries),
                  unsigned(p.q_heads), unsigned(p.runs.count));
  flash_attention_wgmma_kernel<<<grid, block_threads, shared_bytes, stream>>>(
      p, p.scale * 1.4426950408889634f);
  check_launch("flash_attention_wgmma");
}

}  // namespace cua_s1::kernels
