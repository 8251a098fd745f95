// Linear = one cuBLASLt product + bias kernel + the two LoRA kernels; stage reports.
#include "gpu/forward_context.hpp"

#include <vector>

#include "gpu/device_buffer.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/lora.hpp"

namespace cua_s1::gpu {

void forward_context::linear(const device_linear& layer, const bf16* x, int64_t m, float* y,
                             int64_t ldy, bool accumulate) const {
  gemm->linear(x, m, layer.in, layer.in, layer.weight, layer.out, y, ldy, accumulate, stream);
  if (layer.bias) kernels::add_bias(y, m, layer.out, ldy, layer.bias, stream);
  if (layer.lora.rank) {
    const int64_t splits = kernels::lora_down_splits(layer.in);
    device_buffer<float> partial(size_t(splits * m * layer.lora.rank), stream);
    kernels::lora_down(x, m, layer.in, layer.in, layer.lora.a, layer.lora.rank, partial.get(), stream);
    kernels::lora_up_add(partial.get(), splits, m, layer.lora.rank, layer.lora.b, layer.out,
                         layer.lora.scale, y, ldy, stream);
  }
}

void forward_context::report(const std::string& stage, const float* device_data, int64_t rows,
                             int64_t cols) const {
  if (!probing()) return;
  std::vector<float> host(size_t(rows * cols));
  check_cuda(cudaMemcpyAsync(host.data(), device_data, host.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync (stage)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (stage)");
  (*probe)(stage, host.data(), rows, cols);
}

}  // namespace cua_s1::gpu
