// cuda_backend: vision once per request, every question's prefill enqueued on one stream, one
// copy of all letter logits back; stage times from CUDA events.
#include "gpu/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <exception>

#include "gpu/cuda_check.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_weights.hpp"
#include "gpu/language_forward.hpp"
#include "gpu/lt_gemm.hpp"
#include "gpu/vision_forward.hpp"

namespace cua_s1 {
namespace {

using gpu::check_cuda;

class event {
 public:
  event() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~event() { cudaEventDestroy(event_); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

class cuda_backend final : public backend {
 public:
  cuda_backend(std::shared_ptr<const model_weights> weights, int device, cpu::stage_probe probe)
      : weights_(std::move(weights)), device_(device), probe_(std::move(probe)) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp properties{};
    check_cuda(cudaGetDeviceProperties(&properties, device_), "cudaGetDeviceProperties");
    // Keep freed stream-ordered allocations cached in the pool instead of returning them.
    cudaMemPool_t pool = nullptr;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, device_), "cudaDeviceGetDefaultMemPool");
    uint64_t threshold = UINT64_MAX;
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
               "cudaMemPoolSetAttribute");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    start_ = std::make_unique<event>();
    vision_done_ = std::make_unique<event>();
    language_done_ = std::make_unique<event>();
    device_weights_ = std::make_unique<gpu::device_weights>(*weights_);
    gemm_ = std::make_unique<gpu::lt_gemm>();
    description_ = "cuda (" + std::string(properties.name) + ", sm_" +
                   std::to_string(properties.major) + std::to_string(properties.minor) + ", " +
                   std::to_string(device_weights_->bytes() >> 20) + " MiB of weights)";
  }

  ~cuda_backend() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);  // drain before buffers and weights go
      device_weights_.reset();
      gemm_.reset();
      cudaStreamDestroy(stream_);
    }
  }

  outcome<std::vector<question_logits>> run(const prepared_request& request) override {
    last_ = {};
    try {
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      gpu::forward_context ctx;
      ctx.stream = stream_;
      ctx.gemm = gemm_.get();
      ctx.probe = probe_ ? &probe_ : nullptr;
      const model_config& config = weights_->config;

      check_cuda(cudaEventRecord(start_->get(), stream_), "cudaEventRecord");
      gpu::device_buffer<float> features =
          gpu::encode_image(ctx, config.vision, device_weights_->vision, request.pixels);
      const int64_t image_rows = int64_t(features.size() / config.text.hidden_size);
      check_cuda(cudaEventRecord(vision_done_->get(), stream_), "cudaEventRecord");

      size_t letters = 0;
      for (const prepared_question& question : request.questions) letters += question.letter_ids.size();
      gpu::device_buffer<float> logits(letters, stream_);
      size_t offset = 0;
      for (const prepared_question& question : request.questions) {
        gpu::enqueue_letter_logits(ctx, config, device_weights_->language, question,
                                   features.get(), image_rows, logits.get() + offset);
        offset += question.letter_ids.size();
      }
      check_cuda(cudaEventRecord(language_done_->get(), stream_), "cudaEventRecord");
      std::vector<float> host(letters);
      check_cuda(cudaMemcpyAsync(host.data(), logits.get(), letters * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync (logits)");
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");

      float vision_ms = 0, language_ms = 0;
      check_cuda(cudaEventElapsedTime(&vision_ms, start_->get(), vision_done_->get()), "cudaEventElapsedTime");
      check_cuda(cudaEventElapsedTime(&language_ms, vision_done_->get(), language_done_->get()),
                 "cudaEventElapsedTime");
      last_.vision = vision_ms / 1e3;
      last_.language = language_ms / 1e3;

      std::vector<question_logits> answers;
      offset = 0;
      for (const prepared_question& question : request.questions) {
        answers.push_back({std::vector<float>(host.begin() + long(offset),
                                              host.begin() + long(offset + question.letter_ids.size()))});
        offset += question.letter_ids.size();
      }
      return answers;
    } catch (const gpu::cuda_error& error) {
      cudaStreamSynchronize(stream_);  // drain what was enqueued before the buffers go
      return failure{500, std::string(error.sticky() ? "cuda backend (fatal): " : "cuda backend: ") +
                              error.what()};
    } catch (const std::exception& error) {
      cudaStreamSynchronize(stream_);
      return failure{500, std::string("cuda backend: ") + error.what()};
    }
  }

  std::string description() const override { return description_; }
  stage_seconds last_run_seconds() const override { return last_; }

 private:
  std::shared_ptr<const model_weights> weights_;
  int device_;
  cpu::stage_probe probe_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<gpu::device_weights> device_weights_;
  std::unique_ptr<gpu::lt_gemm> gemm_;
  std::unique_ptr<event> start_, vision_done_, language_done_;
  std::string description_;
  stage_seconds last_;
};

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear "no device" / "no driver"
    return 0;
  }
  return count;
}

outcome<std::unique_ptr<backend>> make_cuda_backend(std::shared_ptr<const model_weights> weights,
                                                    int device) {
  return make_cuda_backend(std::move(weights), device, {});
}

outcome<std::unique_ptr<backend>> make_cuda_backend(std::shared_ptr<const model_weights> weights,
                                                    int device, cpu::stage_probe probe) {
  if (device < 0 || device >= cuda_device_count())
    return failure{500, "CUDA device " + std::to_string(device) + " is not available (" +
                            std::to_string(cuda_device_count()) + " found)"};
  try {
    return std::unique_ptr<backend>(
        std::make_unique<cuda_backend>(std::move(weights), device, std::move(probe)));
  } catch (const std::exception& error) {
    return failure{500, std::string("cuda backend: ") + error.what()};
  }
}

}  // namespace cua_s1
