// GPU time of the language model's Linear shapes through our cuBLASLt plans, separate and with
// the Linears that read the same input fused into one product, at prompt heights around the
// 1280x720 one-question request (with and without the kept prompt opening). With --candidates N
// instead: every product of a 1280x720 one-question request as the forward calls it (output type,
// bias, GELU, accumulation), timed with each of the heuristic's first N algorithms, to see what
// the heuristic's first choice leaves.
//   gemm_bench [--iterations N] [--rows M ...] [--candidates N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef CUA_S1_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.hpp"
#include "gpu/lt_gemm.hpp"
#include "gpu_timing.hpp"

namespace {

using cua_s1::bench::random_bf16;
using cua_s1::bench::time_ms;
using cua_s1::gpu::check_cuda;

struct shape {
  const char* name;
  std::vector<int64_t> outs;  // one Linear per entry; fused: one product of their sum
  int64_t in;
};

// Qwen3.5-4B: hidden 2560, MLP 9216; GDN q/k 2 x 2048 + v 4096, z 4096, b and a 32 each, output
// 4096 -> 2560; attention q + gate 8192, k and v 1024 each, output 4096 -> 2560.
const std::vector<shape> shapes = {
    {"mlp gate, up", {9216, 9216}, 2560},
    {"mlp down", {2560}, 9216},
    {"gdn in qkv, z, b, a", {8192, 4096, 32, 32}, 2560},
    {"gdn out", {2560}, 4096},
    {"attention q, k, v", {8192, 1024, 1024}, 2560},
    {"attention out", {2560}, 4096},
};

// One product of the forward (bench/RESULTS.md names them): m x n x k, what its epilogue does.
struct product {
  const char* name;
  int64_t m, n, k;
  enum { fp32, fp32_bias, accumulate_bias, accumulate, bf16_out, gelu_bias } kind;
};

// The products of a 1280x720 one-question request (3,600 patches, 900 merged rows, 995 language
// rows after the kept opening; vision MLP inputs carry the folded LoRA's 3 x 16 columns).
const std::vector<product> request_products = {
    {"vision qkv", 3600, 3072, 1024, product::fp32_bias},
    {"vision proj", 3600, 1024, 1024, product::accumulate_bias},
    {"vision fc1 + GELU", 3600, 4096, 1024 + 48, product::gelu_bias},
    {"vision fc2", 3600, 1024, 4096 + 48, product::accumulate_bias},
    {"merger fc1", 900, 4096, 4096, product::fp32},
    {"merger fc2", 900, 2560, 4096, product::fp32},
    {"gdn in (stacked)", 995, 12352, 2560, product::fp32},
    {"gdn out", 995, 2560, 4096, product::accumulate},
    {"mlp gate (bf16)", 995, 9216, 2560, product::bf16_out},
    {"mlp down", 995, 2560, 9216, product::accumulate},
    {"attention q", 995, 8192, 2560, product::fp32},
    {"attention k", 995, 1024, 2560, product::fp32},
    {"attention out", 995, 2560, 4096, product::accumulate},
};

// Each product with the heuristic's first `count` algorithms: its first choice's time, the best
// one's and where the best stands in the heuristic's order.
void compare_candidates(cua_s1::gpu::lt_gemm& gemm, cudaStream_t stream, int iterations, int count) {
  int64_t max_a = 0, max_b = 0, max_c = 0, max_n = 0;
  for (const product& p : request_products) {
    max_a = std::max(max_a, p.m * p.k);
    max_b = std::max(max_b, p.n * p.k);
    max_c = std::max(max_c, p.m * p.n);
    max_n = std::max(max_n, p.n);
  }
  __nv_bfloat16* a = random_bf16(size_t(max_a));
  __nv_bfloat16* b = random_bf16(size_t(max_b));
  __nv_bfloat16* bias = random_bf16(size_t(max_n), 0.1f);
  float* bias32 = nullptr;
  float* c = nullptr;
  check_cuda(cudaMalloc(&bias32, size_t(max_n) * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMemset(bias32, 0, size_t(max_n) * sizeof(float)), "cudaMemset");
  check_cuda(cudaMalloc(&c, size_t(max_c) * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMemset(c, 0, size_t(max_c) * sizeof(float)), "cudaMemset");
  std::printf("| product | m x n x k | algorithms | first ms | best ms | best is # | gain |\n"
              "|---|---|---|---|---|---|---|\n");
  double first_total = 0, best_total = 0;
  for (const product& p : request_products) {
    cua_s1::gpu::gemm_call call;
    call.m = p.m, call.n = p.n, call.k = p.k;
    call.a = a, call.lda = p.k, call.b = b, call.ldb = p.k, call.b_transposed = true;
    call.ldc = p.n;
    if (p.kind == product::bf16_out) call.bf16_out = reinterpret_cast<__nv_bfloat16*>(c);
    else if (p.kind == product::gelu_bias) call.gelu_out = reinterpret_cast<__nv_bfloat16*>(c), call.gelu_bias = bias;
    else call.c = c;
    if (p.kind == product::accumulate || p.kind == product::accumulate_bias) call.beta = 1.0f;
    if (p.kind == product::fp32_bias || p.kind == product::accumulate_bias) call.bias = bias32;
    const std::vector<cublasLtMatmulAlgo_t> algos = gemm.algorithms(call, count);
    if (algos.empty()) {  // e.g. a GELU epilogue no algorithm takes: the forward runs it apart
      std::printf("| %s | %lld x %lld x %lld | 0 | | | | |\n", p.name, static_cast<long long>(p.m),
                  static_cast<long long>(p.n), static_cast<long long>(p.k));
      continue;
    }
    double first = 0, best = 1e30;
    size_t best_index = 0;
    for (size_t i = 0; i < algos.size(); ++i) {
      const double ms = time_ms(stream, iterations, [&] { (void)gemm.run(call, &algos[i], stream); });
      if (i == 0) first = ms;
      if (ms < best) best = ms, best_index = i;
    }
    first_total += first;
    best_total += best;
    std::printf("| %s | %lld x %lld x %lld | %zu | %.4f | %.4f | %zu | %.1f%% |\n", p.name,
                static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), algos.size(), first, best, best_index,
                100.0 * (first - best) / first);
  }
  std::printf("| all (once each) | | | %.4f | %.4f | | %.1f%% |\n", first_total, best_total,
              100.0 * (first_total - best_total) / first_total);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaFree(a);
  cudaFree(b);
  cudaFree(bias);
  cudaFree(bias32);
  cudaFree(c);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50, candidates = 0;
  std::vector<int64_t> rows;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (arg == "--rows" && i + 1 < argc) {
      rows.push_back(std::atoll(argv[++i]));
    } else if (arg == "--candidates" && i + 1 < argc) {
      candidates = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: gemm_bench [--iterations N] [--rows M ...] [--candidates N]\n");
      return 2;
    }
  }
  if (rows.empty()) rows = {995, 1059, 1024, 1152};
  if (iterations < 1) iterations = 1;
  try {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
    cua_s1::gpu::lt_gemm gemm;
    if (candidates > 0) {
      compare_candidates(gemm, stream, iterations, candidates);
      cudaStreamDestroy(stream);
      return 0;
    }
    int64_t max_rows = 0, max_in = 0, max_out = 0;
    for (int64_t m : rows) max_rows = std::max(max_rows, m);
    for (const shape& s : shapes) {
      int64_t out = 0;
      for (int64_t o : s.outs) out += o;
      max_in = std::max(max_in, s.in);
      max_out = std::max(max_out, out);
    }
    __nv_bfloat16* x = random_bf16(size_t(max_rows * max_in));
    __nv_bfloat16* w = random_bf16(size_t(max_out * max_in));
    float* y = nullptr;
    check_cuda(cudaMalloc(&y, size_t(max_rows * max_out) * sizeof(float)), "cudaMalloc");

    std::printf("| rows | Linears | separate ms | fused ms | separate TFLOP/s | fused TFLOP/s |\n"
                "|---|---|---|---|---|---|\n");
    for (int64_t m : rows)
      for (const shape& s : shapes) {
        int64_t total = 0;
        for (int64_t o : s.outs) total += o;
        const double separate = time_ms(stream, iterations, [&] {
          int64_t column = 0;  // each Linear into its own [m, o] output, as the forward does
          for (int64_t o : s.outs) {
            gemm.linear(x, m, s.in, s.in, w + column * s.in, o, y + column * m, o, false, stream);
            column += o;
          }
        });
        const double fused = time_ms(stream, iterations, [&] {
          gemm.linear(x, m, s.in, s.in, w, total, y, total, false, stream);
        });
        const double flop = 2.0 * double(m) * double(total) * double(s.in);
        std::printf("| %lld | %s | %.4f | %.4f | %.0f | %.0f |\n", static_cast<long long>(m),
                    s.name, separate, fused, flop / separate / 1e9, flop / fused / 1e9);
      }
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    cudaStreamDestroy(stream);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gemm_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
#else
int main() {
  std::fprintf(stderr, "gemm_bench: this build has no CUDA backend\n");
  return 1;
}
#endif
