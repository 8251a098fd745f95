// GPU test helpers: whether a CUDA device is present (tests are skipped with a message where
// not), the CUDA backend's header when this build has it, and what cuda_kernels_test and
// cuda_backend_test share: random prompts, requests and pictures for the tiny model, and a
// stream with the tiny weights on the device for calling forwards and kernels directly.
#pragma once

#include <boost/test/unit_test.hpp>
#include <iostream>
#include <random>
#include <vector>

#include "codec/rgb_image.hpp"
#include "prep/mrope_positions.hpp"
#include "prep/request_preparer.hpp"
#include "tiny_parity.hpp"

#ifdef CUA_S1_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_weights.hpp"
#include "gpu/forward_context.hpp"
#include "gpu/host_staging.hpp"
#include "gpu/lt_gemm.hpp"
#endif

namespace cua_s1::test {

// A Boost.Test precondition: true when a CUDA device can run the tests; else says why.
inline boost::test_tools::assertion_result cuda_present(boost::unit_test::test_unit_id) {
#ifdef CUA_S1_HAVE_CUDA
  if (cuda_device_count() > 0) return true;
  boost::test_tools::assertion_result result(false);
  result.message() << "SKIPPED: no CUDA device on this machine (GPU tests run on the GPU host)";
  return result;
#else
  boost::test_tools::assertion_result result(false);
  result.message() << "SKIPPED: this build has no CUDA backend";
  return result;
#endif
}

// Global fixture: prints one visible line when every GPU test of the binary is skipped.
struct cuda_skip_notice {
  cuda_skip_notice() {
    const auto present = cuda_present(0);
    if (!present) std::cout << present.message() << std::endl;
  }
};

// The random source of the inputs (seeded afresh in every run).
inline std::mt19937& rng() {
  static std::mt19937 generator(std::random_device{}());
  return generator;
}

// The bundled tiny model (or $CUA_S1_PARITY_MODEL), loaded once.
inline const model_weights& tiny() {
  static const auto weights = test::parity::load_tiny_weights();
  return *weights;
}

// A question of `tokens` random text tokens (no image) reading all 26 letters.
inline prepared_question text_question(size_t tokens) {
  std::uniform_int_distribution<int32_t> id(0, 400);  // below the tiny model's special ids
  prepared_question q;
  for (size_t i = 0; i < tokens; ++i) q.input_ids.push_back(id(rng()));
  q.positions = compute_mrope_positions(tokens, 2, 2, 2, 0);  // no image: 0..tokens-1
  for (auto& axis : q.positions.axes) axis.resize(tokens);
  for (int32_t letter = 0; letter < 26; ++letter) q.letter_ids.push_back(32 + letter);
  return q;
}

// A request with random pixel values on a grid of grid_h x grid_w patches and one 26-option
// question around the image, after `text_before` random text tokens.
inline prepared_request image_request(uint32_t grid_h, uint32_t grid_w, size_t text_before = 5) {
  const vision_config& v = tiny().config.vision;
  prepared_request r;
  r.pixels.grid = {1, grid_h, grid_w};
  std::normal_distribution<float> pixel(0.0f, 0.5f);
  r.pixels.pixel_values.resize(size_t(grid_h) * grid_w * v.patch_dim());
  for (float& p : r.pixels.pixel_values) p = pixel(rng());
  prepared_question q = text_question(text_before);
  q.input_ids.push_back(tiny().config.vision_start_token_id);
  const size_t image_start = q.input_ids.size();
  const size_t pads = size_t(grid_h / 2) * (grid_w / 2);
  q.input_ids.insert(q.input_ids.end(), pads, tiny().config.image_token_id);
  q.input_ids.push_back(tiny().config.vision_end_token_id);
  for (int i = 0; i < 7; ++i) q.input_ids.push_back(100 + i);
  q.image_start = image_start;
  q.positions = compute_mrope_positions(image_start, grid_h, grid_w, 2, 8);
  r.questions.push_back(std::move(q));
  return r;
}

// A picture of random bytes.
inline rgb_image random_picture(uint32_t width, uint32_t height) {
  std::uniform_int_distribution<int> byte(0, 255);
  rgb_image picture{width, height, picture_bytes(size_t(width) * height * 3)};
  for (uint8_t& v : picture.pixels) v = uint8_t(byte(rng()));
  return picture;
}

#ifdef CUA_S1_HAVE_CUDA
// A stream, GEMM plans, staging and the tiny weights on the device, for calling forwards directly.
struct gpu_rig {
  gpu::device_weights weights{tiny()};
  gpu::lt_gemm gemm;
  gpu::host_staging staging;
  cudaStream_t stream = nullptr;
  gpu_rig() { gpu::check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate"); }
  ~gpu_rig() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  gpu::forward_context context() {
    gpu::forward_context ctx;
    ctx.stream = stream;
    ctx.gemm = &gemm;
    ctx.staging = &staging;
    return ctx;
  }
};

inline gpu_rig& rig() {
  static gpu_rig instance;
  return instance;
}

// `count` values copied from the device once the stream has finished.
template <class T>
std::vector<T> download(const T* device, size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  gpu::check_cuda(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
                  "cudaMemcpyAsync");
  gpu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return host;
}
#endif

}  // namespace cua_s1::test
