// cuda_backend: vision once per request, the prompt opening once while it stays the same, the
// questions' shared prefix once, the questions' suffixes batched into one pass, all on one
// stream, one copy of all letter logits back; stage times from CUDA events.
#include "gpu/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <span>

#include "api/decision_request.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_weights.hpp"
#include "gpu/execution_plan.hpp"
#include "gpu/host_staging.hpp"
#include "gpu/language_graphs.hpp"
#include "gpu/lt_gemm.hpp"
#include "gpu/pinned_pictures.hpp"
#include "gpu/vision_forward.hpp"
#include "gpu/vision_graphs.hpp"
#include "kernels/gated_deltanet.hpp"
#include "prep/shared_prefix.hpp"

namespace cua_s1 {
namespace {

using gpu::check_cuda;

// The most suffix rows one batched language pass takes: its activations then need no more
// memory than one prompt of the longest valid length.
constexpr size_t max_batch_rows = max_prompt_tokens;

// Image sizes whose vision graphs are kept (agents mostly send one screen size).
constexpr size_t max_vision_graphs = 4;

// Prompt cache rows the request's language passes use: the rows before the suffixes, then the
// largest batch of suffixes.
int64_t rows_needed(const prepared_request& request, const std::vector<question_batch>& batches,
                    int64_t before) {
  int64_t rows = 0;
  for (const question_batch& batch : batches) {
    int64_t batch_rows = before;
    for (size_t i = batch.first; i < batch.first + batch.count; ++i)
      batch_rows += int64_t(request.questions[i].input_ids.size()) - before;
    rows = std::max(rows, batch_rows);
  }
  return rows;
}

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
  cuda_backend(std::shared_ptr<const model_weights> weights, cuda_backend_options options)
      : weights_(std::move(weights)),
        device_(options.device),
        probe_(std::move(options.probe)),
        plan_(probe_ ? gpu::execution_plan::probing()
                     : gpu::execution_plan::serving(options.graph_cache > 0,
                                                    options.reuse_prompt_opening)),
        graphs_(plan_.graphs ? options.graph_cache : 0),
        vision_graphs_(std::min(plan_.graphs ? options.graph_cache : 0, max_vision_graphs)),
        merged_(options.merge_language_lora) {
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
    done_ = std::make_unique<event>();
    device_weights_ = std::make_unique<gpu::device_weights>(*weights_, merged_);
    gemm_ = std::make_unique<gpu::lt_gemm>();
    description_ = "cuda (" + std::string(properties.name) + ", sm_" +
                   std::to_string(properties.major) + std::to_string(properties.minor) + ", " +
                   std::to_string(device_weights_->bytes() >> 20) + " MiB of weights, language LoRA " +
                   (merged_ ? "merged" : "unmerged") + ")";
  }

  ~cuda_backend() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);  // drain before buffers and weights go
      graphs_.clear();
      vision_graphs_.clear();
      device_weights_.reset();
      gemm_.reset();
      cudaStreamDestroy(stream_);
    }
  }

  outcome<std::vector<question_logits>> run(const prepared_request& request) override {
    return start(request)->collect();  // collect() waits for the run and reports any error
  }

  std::unique_ptr<pending_run> start(const prepared_request& request) override;

  bool usable() const override { return !broken_; }

  // Turns an error into the run's failure; a sticky one marks the backend unusable.
  failure fail(const std::exception& error) {
    const auto* cuda = dynamic_cast<const gpu::cuda_error*>(&error);
    if (cuda && cuda->sticky()) broken_ = true;
    cudaStreamSynchronize(stream_);  // drain what was enqueued before its buffers are reused
    return failure{500, std::string(broken_ ? "cuda backend (unusable): " : "cuda backend: ") +
                            error.what()};
  }

  // Reads the events and the pinned logits of a finished run.
  outcome<std::vector<question_logits>> finish(const prepared_request& request,
                                               const float* host_logits) {
    try {
      check_cuda(cudaEventSynchronize(done_->get()), "the run on the GPU");
      float vision_ms = 0, language_ms = 0;
      check_cuda(cudaEventElapsedTime(&vision_ms, start_->get(), vision_done_->get()),
                 "cudaEventElapsedTime");
      check_cuda(cudaEventElapsedTime(&language_ms, vision_done_->get(), done_->get()),
                 "cudaEventElapsedTime");
      last_.vision = vision_ms / 1e3;
      last_.language = language_ms / 1e3;
      std::vector<question_logits> answers;
      size_t offset = 0;
      for (const prepared_question& question : request.questions) {
        answers.push_back({std::vector<float>(host_logits + offset,
                                              host_logits + offset + question.letter_ids.size())});
        offset += question.letter_ids.size();
      }
      return answers;
    } catch (const std::exception& error) {
      return fail(error);
    }
  }

  std::string description() const override { return description_; }
  stage_seconds last_run_seconds() const override { return last_; }
  pixel_values_on pixel_values_made() const override { return pixel_values_on::backend; }

 private:
  std::shared_ptr<const model_weights> weights_;
  int device_;
  stage_probe probe_;
  gpu::execution_plan plan_;  // chosen here, once: probing with a probe, else serving
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<gpu::device_weights> device_weights_;
  std::unique_ptr<gpu::lt_gemm> gemm_;
  gpu::language_graphs graphs_;
  gpu::vision_graphs vision_graphs_;
  std::unique_ptr<event> start_, vision_done_, done_;
  gpu::host_staging staging_;
  bool broken_ = false;
  bool merged_;
  std::string description_;
  stage_seconds last_;
};

// A request enqueued on the stream; ready once its last event has completed.
class cuda_pending_run final : public pending_run {
 public:
  cuda_pending_run(cuda_backend& owner, const prepared_request& request, const float* host_logits,
                   cudaEvent_t done)
      : owner_(owner), request_(request), host_logits_(host_logits), done_(done) {}
  bool ready() override { return cudaEventQuery(done_) != cudaErrorNotReady; }
  outcome<std::vector<question_logits>> collect() override {
    return owner_.finish(request_, host_logits_);
  }

 private:
  cuda_backend& owner_;
  const prepared_request& request_;
  const float* host_logits_;
  cudaEvent_t done_;
};

// A run that failed while being enqueued.
class failed_run final : public pending_run {
 public:
  explicit failed_run(failure error) : error_(std::move(error)) {}
  bool ready() override { return true; }
  outcome<std::vector<question_logits>> collect() override { return error_; }

 private:
  failure error_;
};

std::unique_ptr<pending_run> cuda_backend::start(const prepared_request& request) {
  last_ = {};
  if (broken_) return std::make_unique<failed_run>(failure{500, "cuda backend is unusable"});
  try {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    staging_.reset();  // the previous run has been collected
    gpu::forward_context ctx;
    ctx.stream = stream_;
    ctx.gemm = gemm_.get();
    ctx.plan = plan_;
    ctx.probe = probe_ ? &probe_ : nullptr;
    ctx.staging = &staging_;
    const model_config& config = weights_->config;

    check_cuda(cudaEventRecord(start_->get(), stream_), "cudaEventRecord");
    const float* features =
        vision_graphs_.encode(ctx, config.vision, device_weights_->vision, request.pixels);
    const int64_t image_rows = gpu::image_feature_rows(config.vision, request.pixels.grid);
    check_cuda(cudaEventRecord(vision_done_->get(), stream_), "cudaEventRecord");

    size_t letters = 0;
    for (const prepared_question& question : request.questions) letters += question.letter_ids.size();
    gpu::device_buffer<float> logits(letters, stream_);
    // Every prompt opens with the same system text: the cache keeps its first GDN chunk's K/V
    // rows and GDN state between requests. Questions on the same screenshot share the prompt up
    // to (at least) the image: that prefix runs once and leaves its K/V rows and GDN state for
    // every question's suffix. Both end on a GDN chunk boundary, so the suffixes see the chunks
    // of a whole-prompt run. The suffixes then go through the layers together, as runs of one
    // pass. Each as the plan says (the probing plan: whole prompts, one pass each).
    const int64_t chunk = kernels::delta_rule_chunk;
    const int64_t opening = plan_.keep_opening ? int64_t(common_opening_tokens(request, chunk)) : 0;
    const int64_t shared = plan_.share_prefix ? int64_t(shared_prefix_tokens(request, chunk)) : 0;
    const int64_t suffix_start = std::max(shared, opening);
    const std::vector<question_batch> batches =
        suffix_batches(request, size_t(suffix_start), max_batch_rows,
                       plan_.batch_questions ? size_t(kernels::max_runs) : 1);
    graphs_.reserve_rows(config.text, rows_needed(request, batches, suffix_start), stream_);
    const std::span<const prepared_question> questions(request.questions);
    int64_t start = 0;  // where the next segment starts and which GDN state it resumes
    gpu::gdn_slot resume = gpu::gdn_slot::none;
    if (opening > 0) {
      graphs_.enqueue_opening(ctx, config, device_weights_->language, questions.front(), opening,
                              features, image_rows);
      start = opening;
      resume = gpu::gdn_slot::opening;
    }
    if (shared > start) {
      graphs_.enqueue(ctx, config, device_weights_->language, questions.first(1),
                      gpu::segment{start, {shared - start}, resume, gpu::gdn_slot::prefix, false},
                      features, image_rows, nullptr);
      start = shared;
      resume = gpu::gdn_slot::prefix;
    }
    size_t offset = 0;
    for (const question_batch& batch : batches) {
      const auto batch_questions = questions.subspan(batch.first, batch.count);
      gpu::segment part{start, {}, resume, gpu::gdn_slot::none, true};
      for (const prepared_question& question : batch_questions)
        part.lengths.push_back(int64_t(question.input_ids.size()) - start);
      graphs_.enqueue(ctx, config, device_weights_->language, batch_questions, part,
                      features, image_rows, logits.get() + offset);
      for (const prepared_question& question : batch_questions) offset += question.letter_ids.size();
    }
    float* host_logits = staging_.reserve<float>(letters);
    check_cuda(cudaMemcpyAsync(host_logits, logits.get(), letters * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (logits)");
    check_cuda(cudaEventRecord(done_->get(), stream_), "cudaEventRecord");
    // Device buffers are freed stream-ordered as they go out of scope: after the work above.
    return std::make_unique<cuda_pending_run>(*this, request, host_logits, done_->get());
  } catch (const std::exception& error) {
    return std::make_unique<failed_run>(fail(error));
  }
}

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
                                                    cuda_backend_options options) {
  const int device = options.device;
  if (device < 0 || device >= cuda_device_count())
    return failure{500, "CUDA device " + std::to_string(device) + " is not available (" +
                            std::to_string(cuda_device_count()) + " found)"};
  try {
    auto made = std::make_unique<cuda_backend>(std::move(weights), std::move(options));
    // Pictures decoded from now on land in pinned memory the backend uploads from directly.
    use_picture_memory(&gpu::pinned_pictures::instance());
    return std::unique_ptr<backend>(std::move(made));
  } catch (const std::exception& error) {
    return failure{500, std::string("cuda backend: ") + error.what()};
  }
}

}  // namespace cua_s1
