// Linear = one cuBLASLt product with the bias in its epilogue, plus the LoRA branch (down
// projection as a GEMM over A's bf16 split, up projection fused with the output's consumer or
// folded into the product); stage reports.
#include "gpu/forward_context.hpp"

#include <stdexcept>
#include <vector>

#include "gpu/pinned_pictures.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/lora.hpp"

namespace cua_s1::gpu {

void forward_context::upload_picture(const uint8_t* data, size_t count, uint8_t* target) const {
  if (!pinned_pictures::instance().pinned(data, count)) return upload(data, count, target);
  check_cuda(cudaMemcpyAsync(target, data, count, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (picture)");
}

device_buffer<float> forward_context::lora_parts(const device_linear& layer, const bf16* x,
                                                 int64_t m) const {
  const int64_t width = 3 * layer.lora.rank;
  device_buffer<float> parts(size_t(m * width), stream);
  gemm->linear(x, m, layer.in, layer.input_columns(), layer.lora.a_split, width, parts.get(), width,
               false, stream);
  return parts;
}

void forward_context::fill_lora_columns(const device_linear& layer, bf16* x, int64_t m) const {
  if (!layer.folded) return;
  const device_buffer<float> parts = lora_parts(layer, x, m);
  kernels::lora_fold_input(parts.get(), m, layer.lora.rank, x, layer.input_columns(), layer.in,
                           stream);
}

void forward_context::linear_to_bf16(const device_linear& layer, const bf16* x, int64_t m,
                                     bf16* y, int64_t ldy) const {
  if (layer.bias || layer.lora.rank || layer.folded)
    throw std::logic_error("linear_to_bf16: a Linear with a bias or a LoRA branch");
  gemm->linear_to_bf16(x, m, layer.in, layer.in, layer.weight, layer.out, y, ldy, stream);
}

void forward_context::linear(const device_linear& layer, const bf16* x, int64_t m, float* y,
                             int64_t ldy, bool accumulate) const {
  gemm->linear(x, m, layer.input_columns(), layer.input_columns(), layer.weight, layer.out, y, ldy,
               accumulate, stream, layer.bias);
  if (!layer.lora.rank || layer.folded) return;
  const device_buffer<float> parts = lora_parts(layer, x, m);
  kernels::lora_up(parts.get(), 3 * layer.lora.rank, m, layer.lora.rank, layer.lora.b, layer.out,
                   layer.lora.scale, kernels::lora_epilogue::add, y, ldy, nullptr, stream);
}

void forward_context::stacked_linear(const device_linear& stacked,
                                     std::initializer_list<const device_linear*> parts,
                                     const bf16* x, int64_t m, float* y) const {
  int64_t width = 0;
  for (const device_linear* part : parts) width += part->out;
  if (stacked.weight) {
    if (stacked.out != width) throw std::logic_error("stacked_linear: the stack's width differs");
    linear(stacked, x, m, y, width, false);
    return;
  }
  int64_t column = 0;
  for (const device_linear* part : parts) {
    linear(*part, x, m, y + column, width, false);
    column += part->out;
  }
}

void forward_context::linear_gelu(const device_linear& layer, const bf16* x, int64_t m, bf16* out,
                                  bool tanh_approximation, int64_t ldo) const {
  if (ldo == 0) ldo = layer.out;
  const bool whole_product = !layer.lora.rank || layer.folded;  // no separate LoRA branch
  if (whole_product && tanh_approximation && (layer.bias_bf16 || !layer.bias) &&
      gemm->linear_gelu(x, m, layer.input_columns(), layer.input_columns(), layer.weight,
                        layer.out, out, ldo, layer.bias_bf16, stream))
    return;
  device_buffer<float> y(size_t(m * layer.out), stream);
  gemm->linear(x, m, layer.input_columns(), layer.input_columns(), layer.weight, layer.out, y.get(),
               layer.out, false, stream, layer.bias);
  if (whole_product) {
    kernels::gelu_rows_to_bf16(y.get(), m, layer.out, out, ldo,
                               tanh_approximation ? kernels::gelu_kind::tanh : kernels::gelu_kind::erf,
                               stream);
    return;
  }
  if (ldo != layer.out)
    throw std::logic_error("linear_gelu: an unfolded LoRA writes whole rows (ldo = out)");
  const device_buffer<float> parts = lora_parts(layer, x, m);
  kernels::lora_up(parts.get(), 3 * layer.lora.rank, m, layer.lora.rank, layer.lora.b, layer.out,
                   layer.lora.scale,
                   tanh_approximation ? kernels::lora_epilogue::gelu_tanh
                                      : kernels::lora_epilogue::gelu_erf,
                   y.get(), layer.out, out, stream);
}

void forward_context::report(const std::string& stage, const float* device_data, int64_t rows,
                             int64_t cols) const {
  if (!probe || !*probe) return;
  std::vector<float> host(size_t(rows * cols));
  check_cuda(cudaMemcpyAsync(host.data(), device_data, host.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync (stage)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (stage)");
  (*probe)(stage, host.data(), rows, cols);
}

}  // namespace cua_s1::gpu
