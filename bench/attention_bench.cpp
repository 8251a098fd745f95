// GPU time of the vision encoder's attention (16 heads of 64, no mask) at the benchmark images'
// patch counts: the portable mma.sync kernel against the Hopper wgmma one, with the largest
// relative difference between their outputs.
//   attention_bench [--iterations N] [--tokens T ...]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef CUA_S1_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.hpp"
#include "gpu_timing.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_attention_testing.hpp"

namespace {

using cua_s1::gpu::check_cuda;

constexpr int64_t heads = 16, head_dim = 64, width = heads * head_dim;

std::vector<float> download(const float* device, size_t count) {
  std::vector<float> host(count);
  check_cuda(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  return host;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50;
  std::vector<int64_t> token_counts;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--tokens" && i + 1 < argc) {
      token_counts.push_back(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: attention_bench [--iterations N] [--tokens T ...]\n");
      return 2;
    }
  }
  if (token_counts.empty()) token_counts = {1200, 3520, 4096};  // 640x480, 1280x720, 1024x1024
  try {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
    std::printf("| tokens | portable ms | hopper ms | portable TFLOP/s | hopper TFLOP/s | max rel diff |\n"
                "|---|---|---|---|---|---|\n");
    for (const int64_t tokens : token_counts) {
      // q, k, v interleaved per token as the vision qkv product leaves them.
      __nv_bfloat16* qkv = cua_s1::bench::random_bf16(size_t(tokens * 3 * width), 2.0f);
      float *portable_out = nullptr, *hopper_out = nullptr;
      check_cuda(cudaMalloc(&portable_out, size_t(tokens * width) * sizeof(float)), "cudaMalloc");
      check_cuda(cudaMalloc(&hopper_out, size_t(tokens * width) * sizeof(float)), "cudaMalloc");
      cua_s1::kernels::attention_problem p;
      p.q = qkv;
      p.k = qkv + width;
      p.v = qkv + 2 * width;
      p.ldq = p.ldk = p.ldv = 3 * width;
      p.ldo = width;
      p.tokens = tokens;
      p.q_heads = p.kv_heads = heads;
      p.head_dim = head_dim;
      p.scale = 1.0f / std::sqrt(float(head_dim));
      auto portable = p, hopper = p;
      portable.out = portable_out;
      hopper.out = hopper_out;
      const double portable_ms = cua_s1::bench::time_ms(
          stream, iterations, [&] { cua_s1::kernels::flash_attention_portable(portable, stream); });
      const double hopper_ms = cua_s1::bench::time_ms(
          stream, iterations, [&] { cua_s1::kernels::flash_attention(hopper, stream); });
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      const std::vector<float> a = download(portable_out, size_t(tokens * width)),
                               b = download(hopper_out, size_t(tokens * width));
      double diff = 0, norm = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        norm = std::max(norm, double(std::fabs(a[i])));
      }
      const double flop = 4.0 * double(tokens) * double(tokens) * double(width);
      std::printf("| %lld | %.4f | %.4f | %.0f | %.0f | %.2e |\n", static_cast<long long>(tokens),
                  portable_ms, hopper_ms, flop / portable_ms / 1e9, flop / hopper_ms / 1e9,
                  diff / std::max(norm, 1e-30));
      cudaFree(qkv);
      cudaFree(portable_out);
      cudaFree(hopper_out);
    }
    cudaStreamDestroy(stream);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attention_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
#else
int main() {
  std::fprintf(stderr, "attention_bench: this build has no CUDA backend\n");
  return 1;
}
#endif
