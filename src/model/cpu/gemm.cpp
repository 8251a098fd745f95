// OpenBLAS sgemm over bf16 weight panels widened into a bounded fp32 scratch, plus unmerged LoRA.
#include "model/cpu/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>

#include "model/cpu/parallel.hpp"
#include "model/cpu/tensor_math.hpp"

namespace cua_s1::cpu {

void set_blas_threads(unsigned threads) { openblas_set_num_threads(int(std::max(1u, threads))); }

void sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, bool b_transposed, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta,
              c, blasint(ldc));
}

gemm_engine::gemm_engine(size_t scratch_bytes, unsigned threads)
    : scratch_floats_(std::max<size_t>(scratch_bytes / sizeof(float), 1)),
      threads_(std::max(1u, threads)) {}

void gemm_engine::matmul_weight_t(const tensor_view& weight, const float* x, int64_t m,
                                  int64_t ldx, float* y, int64_t ldy) {
  if (weight.shape.size() < 2) throw std::invalid_argument("matmul_weight_t: weight is not 2-D");
  const int64_t n = weight.shape[0];
  int64_t k = 1;
  for (size_t i = 1; i < weight.shape.size(); ++i) k *= weight.shape[i];
  if (weight.type == tensor_view::dtype::f32) {
    sgemm(m, n, k, 1.0f, x, ldx, weight.f32(), k, true, 0.0f, y, ldy);
    return;
  }
  const int64_t panel_rows = std::clamp<int64_t>(int64_t(scratch_floats_) / std::max<int64_t>(k, 1), 1, n);
  panel_.resize(size_t(panel_rows * k));
  for (int64_t r0 = 0; r0 < n; r0 += panel_rows) {
    const int64_t rows = std::min(panel_rows, n - r0);
    const uint16_t* source = weight.bf16() + size_t(r0) * size_t(k);
    const size_t count = size_t(rows) * size_t(k);
    // Widening is memory-bound: split large panels over the backend's threads.
    const unsigned workers = count >= (size_t(1) << 20) ? threads_ : 1u;
    parallel_for(count, workers, [&](size_t begin, size_t end) {
      bf16_to_float(source + begin, panel_.data() + begin, end - begin);
    });
    sgemm(m, rows, k, 1.0f, x, ldx, panel_.data(), k, true, 0.0f, y + r0, ldy);
  }
}

void gemm_engine::linear(const linear_weights& layer, const float* x, int64_t m, int64_t ldx,
                         float* y, int64_t ldy) {
  matmul_weight_t(layer.weight, x, m, ldx, y, ldy);
  const int64_t out = layer.weight.shape[0];
  if (layer.bias) {
    const std::vector<float> bias = to_floats(*layer.bias);
    for (int64_t i = 0; i < m; ++i) {
      float* row = y + i * ldy;
      for (int64_t j = 0; j < out; ++j) row[j] += bias[size_t(j)];
    }
  }
  if (layer.lora) {
    const lora_pair& lora = *layer.lora;
    const int64_t rank = lora.a.shape.at(0), in = lora.a.shape.at(1);
    if (lora.a.type != tensor_view::dtype::f32 || lora.b.type != tensor_view::dtype::f32)
      throw std::invalid_argument("LoRA weights must be f32");
    lora_rows_.resize(size_t(m * rank));
    // (x A^T) B^T * scale, added to the base output in fp32.
    sgemm(m, rank, in, 1.0f, x, ldx, lora.a.f32(), in, true, 0.0f, lora_rows_.data(), rank);
    sgemm(m, out, rank, lora.scale, lora_rows_.data(), rank, lora.b.f32(), rank, true, 1.0f, y,
          ldy);
  }
}

}  // namespace cua_s1::cpu
