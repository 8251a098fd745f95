// What every GPU forward step needs: the stream, the GEMM plans, the execution plan, Linear layers
// with bias and the unmerged LoRA, and stage reports for the parity tests.
#pragma once

#include <cuda_runtime.h>

#include <initializer_list>
#include <string>

#include "gpu/cuda_check.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_weights.hpp"
#include "gpu/execution_plan.hpp"
#include "gpu/host_staging.hpp"
#include "gpu/lt_gemm.hpp"
#include "model/stage_probe.hpp"

namespace cua_s1::gpu {

struct forward_context {
  cudaStream_t stream = nullptr;
  lt_gemm* gemm = nullptr;
  execution_plan plan;                 // the backend's (execution_plan::probing with a probe)
  const stage_probe* probe = nullptr;  // null or empty: no stage reports
  host_staging* staging = nullptr;          // pinned source of every upload of the run

  // Enqueues a copy of `count` host values to `target` through the pinned staging.
  template <class T>
  void upload(const T* data, size_t count, T* target) const {
    if (count == 0) return;
    check_cuda(cudaMemcpyAsync(target, staging->stage(data, count), count * sizeof(T),
                               cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (upload)");
  }

  // Enqueues the upload of a decoded picture's bytes: straight from them when they are pinned
  // picture memory (gpu/pinned_pictures.hpp; they must then stay alive until the stream has
  // copied them, as a request's picture does until its run is collected), else through the
  // staging.
  void upload_picture(const uint8_t* data, size_t count, uint8_t* target) const;

  // y[m, out] (ldy) = x W^T + bias + LoRA, or y += that when `accumulate` (a residual add).
  // x is the bf16 input [m, in] with row stride layer.input_columns(); a folded layer reads its
  // LoRA columns too (fill_lora_columns).
  void linear(const device_linear& layer, const bf16* x, int64_t m, float* y, int64_t ldy,
              bool accumulate) const;

  // y[m, out] (ldy, bf16) = x W^T rounded once, for a Linear with neither bias nor a LoRA branch
  // of its own (merged or none); std::logic_error otherwise.
  void linear_to_bf16(const device_linear& layer, const bf16* x, int64_t m, bf16* y,
                      int64_t ldy) const;

  // For a folded layer (device_linear::folded): the LoRA down projection of x [m, in] into x's
  // extra columns, which the layer's product then reads. Nothing for other layers.
  void fill_lora_columns(const device_linear& layer, bf16* x, int64_t m) const;

  // The Linears `parts` (all reading x) into consecutive column slices of y [m, sum of their
  // outs]: one product of `stacked` when it is set (device_weights: their weights back to back,
  // no bias or LoRA), else one Linear each.
  void stacked_linear(const device_linear& stacked,
                      std::initializer_list<const device_linear*> parts, const bf16* x,
                      int64_t m, float* y) const;

  // out[m, out] = bf16(GELU(x W^T + bias + LoRA)), out's rows ldo apart (0: out; an unmerged,
  // unfolded LoRA needs that): the fp32 sum is read once by the LoRA up projection, which
  // applies the GELU, or by the GELU (vision MLP and merger fc1).
  void linear_gelu(const device_linear& layer, const bf16* x, int64_t m, bf16* out,
                   bool tanh_approximation, int64_t ldo = 0) const;

  // With a probe: copies [rows, cols] fp32 from the device (synchronising the stream) and
  // reports it. Nothing without one.
  void report(const std::string& stage, const float* device_data, int64_t rows,
              int64_t cols) const;

 private:
  // [m, 3 * rank] = x [A_hi; A_mid; A_lo]^T, the LoRA down projection on tensor cores.
  device_buffer<float> lora_parts(const device_linear& layer, const bf16* x, int64_t m) const;
};

}  // namespace cua_s1::gpu
