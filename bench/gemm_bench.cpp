// GPU time of the language model's Linear shapes through our cuBLASLt plans, separate and with
// the Linears that read the same input fused into one product, at prompt heights around the
// 1280x720 one-question request (with and without the kept prompt opening).
//   gemm_bench [--iterations N] [--rows M ...]
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

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50;
  std::vector<int64_t> rows;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (arg == "--rows" && i + 1 < argc) {
      rows.push_back(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: gemm_bench [--iterations N] [--rows M ...]\n");
      return 2;
    }
  }
  if (rows.empty()) rows = {995, 1059, 1024, 1152};
  if (iterations < 1) iterations = 1;
  try {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
    cua_s1::gpu::lt_gemm gemm;
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
