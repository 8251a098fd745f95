// cuda_backend: a pass of requests enqueued on one stream as packs (prep/request_packs.hpp):
// requests whose questions run whole after the prompt opening go through one packed language
// pass together, each question a run; any other request runs alone: vision once, the prompt
// opening once while it stays the same, the questions' shared prefix once, the questions'
// suffixes batched into one pass. One copy of a pack's letter logits back; stage times from CUDA
// events.
#include "gpu/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <vector>

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
#include "gpu/pass_workspace.hpp"
#include "kernels/gated_deltanet.hpp"
#include "prep/request_packs.hpp"
#include "prep/shared_prefix.hpp"

namespace cua_s1 {
namespace {

using gpu::check_cuda;

// The most suffix rows one batched language pass takes: its activations then need no more
// memory than one prompt of the longest valid length.
constexpr size_t max_batch_rows = max_prompt_tokens;

// Image sizes whose vision graphs are kept (agents mostly send one screen size).
constexpr size_t max_vision_graphs = 4;

// The letter logits a request's answers read: its questions' options, question after question.
size_t letter_count(const prepared_request& request) {
  size_t letters = 0;
  for (const prepared_question& question : request.questions) letters += question.letter_ids.size();
  return letters;
}

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

// The events around one pack of a pass: its vision from `start` to `vision_done`, its language
// passes from there to `done`.
struct pack_events {
  event start, vision_done, done;
};

// One request of a pass once enqueued: where its letter logits land, or why it could not be
// enqueued.
struct enqueued_request {
  size_t index = 0;  // in the pass: where its outcome goes
  const prepared_request* request = nullptr;
  const float* host_logits = nullptr;
  std::optional<failure> error;
};

// The requests of one pack once enqueued, and the events its stage times come from (null when
// it failed before they were recorded).
struct enqueued_pack {
  std::vector<enqueued_request> requests;
  const pack_events* events = nullptr;
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
        merged_(options.merge_language_lora),
        max_pass_rows_(options.max_pass_rows),
        max_pass_patches_(options.max_pass_patches) {
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

  // A pass at the full budgets must fit (the serving plan; the probing plan runs one prompt at a
  // time): run one now, so that the server fails at startup rather than under load, and the
  // memory pool keeps what it needs. Throws when it does not fit.
  void check_pass_budgets() {
    if (!plan_.batch_questions) return;
    gpu::reserve_pass_workspace(context(), weights_->config, *device_weights_, graphs_,
                                opening_rows(), int64_t(max_pass_rows_),
                                int64_t(max_pass_patches_));
    staging_.reset();
  }

  request_logits run(const prepared_request& request) override {
    const prepared_request* alone[] = {&request};
    pass_result pass = start(alone)->collect();  // collect() waits for the pass
    return std::move(pass.requests.front());
  }

  std::unique_ptr<pending_run> start(request_batch requests) override;

  bool usable() const override { return !broken_; }

  // Turns an error into the run's failure; a sticky one marks the backend unusable.
  failure fail(const std::exception& error) {
    const auto* cuda = dynamic_cast<const gpu::cuda_error*>(&error);
    if (cuda && cuda->sticky()) broken_ = true;
    cudaStreamSynchronize(stream_);  // drain what was enqueued before its buffers are reused
    return failure{500, std::string(broken_ ? "cuda backend (unusable): " : "cuda backend: ") +
                            error.what()};
  }

  // Reads the events and the pinned logits of a finished pass, request by request. An error
  // here is the device's: it fails every request of the pass.
  pass_result finish(const std::vector<enqueued_pack>& packs, cudaEvent_t done) {
    pass_result pass;
    size_t count = 0;
    for (const enqueued_pack& pack : packs) count += pack.requests.size();
    // Outcomes in the pass's order of requests (a pack may take requests from further on).
    pass.requests.assign(count, failure{500, "cuda backend: the request was not run"});
    try {
      if (done) check_cuda(cudaEventSynchronize(done), "the run on the GPU");
      for (const enqueued_pack& pack : packs) {
        if (pack.events) {
          float vision_ms = 0, language_ms = 0;
          const pack_events& events = *pack.events;
          check_cuda(cudaEventElapsedTime(&vision_ms, events.start.get(), events.vision_done.get()),
                     "cudaEventElapsedTime");
          check_cuda(cudaEventElapsedTime(&language_ms, events.vision_done.get(), events.done.get()),
                     "cudaEventElapsedTime");
          pass.seconds.vision += vision_ms / 1e3;
          pass.seconds.language += language_ms / 1e3;
        }
        for (const enqueued_request& enqueued : pack.requests) {
          if (enqueued.error) {
            pass.requests.at(enqueued.index) = *enqueued.error;
            continue;
          }
          std::vector<question_logits> answers;
          size_t offset = 0;
          for (const prepared_question& question : enqueued.request->questions) {
            answers.push_back({std::vector<float>(enqueued.host_logits + offset,
                                                  enqueued.host_logits + offset +
                                                      question.letter_ids.size())});
            offset += question.letter_ids.size();
          }
          pass.requests.at(enqueued.index) = std::move(answers);
        }
      }
    } catch (const std::exception& error) {
      pass.requests.assign(count, fail(error));
      pass.seconds = {};
    }
    last_ = pass.seconds;
    return pass;
  }

  std::string description() const override { return description_; }
  stage_seconds last_run_seconds() const override { return last_; }
  pixel_values_on pixel_values_made() const override { return pixel_values_on::backend; }

 private:
  // The prompt opening packs resume from: the kept one's length, or 0 (from the start).
  int64_t opening_rows() const {
    return plan_.keep_opening ? int64_t(kernels::delta_rule_chunk) : 0;
  }

  // Enqueues the copy of a unit's `letters` logits into pinned memory (returned; valid until the
  // next pass starts) and records its `done` event.
  const float* copy_logits_back(const gpu::device_buffer<float>& logits, size_t letters,
                                const pack_events& events);

  gpu::forward_context context() {
    gpu::forward_context ctx;
    ctx.stream = stream_;
    ctx.gemm = gemm_.get();
    ctx.plan = plan_;
    ctx.probe = probe_ ? &probe_ : nullptr;
    ctx.staging = &staging_;
    return ctx;
  }

  const float* enqueue_request(const gpu::forward_context& ctx, const prepared_request& request,
                               const pack_events& events);
  std::vector<const float*> enqueue_pack(const gpu::forward_context& ctx,
                                         std::span<const prepared_request* const> requests,
                                         const pack_events& events);

  std::shared_ptr<const model_weights> weights_;
  int device_;
  stage_probe probe_;
  gpu::execution_plan plan_;  // chosen here, once: probing with a probe, else serving
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<gpu::device_weights> device_weights_;
  std::unique_ptr<gpu::lt_gemm> gemm_;
  gpu::language_graphs graphs_;
  gpu::vision_graphs vision_graphs_;
  std::vector<std::unique_ptr<pack_events>> events_;  // one per pack of the largest pass
  gpu::host_staging staging_;
  bool broken_ = false;
  bool merged_;
  size_t max_pass_rows_, max_pass_patches_;
  std::string description_;
  stage_seconds last_;
};

// A pass enqueued on the stream; ready once its last pack's `done` event has completed.
class cuda_pending_run final : public pending_run {
 public:
  cuda_pending_run(cuda_backend& owner, std::vector<enqueued_pack> packs, cudaEvent_t done)
      : owner_(owner), packs_(std::move(packs)), done_(done) {}
  bool ready() override { return !done_ || cudaEventQuery(done_) != cudaErrorNotReady; }
  pass_result collect() override { return owner_.finish(packs_, done_); }

 private:
  cuda_backend& owner_;
  std::vector<enqueued_pack> packs_;
  cudaEvent_t done_;  // null when no request could be enqueued
};

// A pass that failed as a whole before anything was enqueued.
class failed_run final : public pending_run {
 public:
  failed_run(failure error, size_t requests) : error_(std::move(error)), requests_(requests) {}
  bool ready() override { return true; }
  pass_result collect() override {
    return {std::vector<request_logits>(requests_, error_), {}};
  }

 private:
  failure error_;
  size_t requests_;
};

std::unique_ptr<pending_run> cuda_backend::start(request_batch requests) {
  last_ = {};
  if (broken_)
    return std::make_unique<failed_run>(failure{500, "cuda backend is unusable"}, requests.size());
  // Packs only where the plan batches questions (not the stage probe's one-prompt passes).
  const size_t opening = size_t(opening_rows());
  std::vector<request_pack> packs;
  try {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    staging_.reset();  // the previous pass has been collected
    if (plan_.batch_questions) {
      packs = language_packs(requests, opening, size_t(kernels::delta_rule_chunk),
                             size_t(kernels::max_runs), max_pass_rows_);
    } else {
      for (size_t i = 0; i < requests.size(); ++i) packs.push_back({i});
    }
  } catch (const std::exception& error) {
    return std::make_unique<failed_run>(fail(error), requests.size());
  }
  const gpu::forward_context ctx = context();
  // Packs of several requests run their language layers as one pass; a pack of one runs as
  // the request would alone (its graphs, its shared prefix). All enqueued back to back on the
  // stream, so that the pass needs one poll. A pack that fails without breaking the device
  // (a request it cannot take, memory) is run again request by request, so that only the
  // failing request fails.
  std::vector<enqueued_pack> enqueued;
  cudaEvent_t last_done = nullptr;
  for (size_t p = 0; p < packs.size(); ++p) {
    enqueued_pack pack;
    std::vector<const prepared_request*> members;
    for (const size_t i : packs[p]) members.push_back(requests[i]);
    if (events_.size() <= enqueued.size()) events_.push_back(std::make_unique<pack_events>());
    const pack_events& events = *events_[enqueued.size()];
    try {
      std::vector<const float*> logits;
      if (members.size() == 1)
        logits.push_back(enqueue_request(ctx, *members.front(), events));
      else
        logits = enqueue_pack(ctx, members, events);
      for (size_t m = 0; m < members.size(); ++m)
        pack.requests.push_back({packs[p][m], members[m], logits[m], std::nullopt});
      pack.events = &events;
      last_done = events.done.get();
    } catch (const std::exception& error) {
      const failure why = fail(error);
      // A sticky error breaks the device for every request of the pass.
      if (broken_) return std::make_unique<failed_run>(why, requests.size());
      if (members.size() > 1) {
        const request_pack failed = packs[p];  // push_back below may move packs[p]
        for (const size_t i : failed) packs.push_back({i});
        continue;
      }
      pack.requests.push_back({packs[p].front(), members.front(), nullptr, why});
    }
    enqueued.push_back(std::move(pack));
  }
  return std::make_unique<cuda_pending_run>(*this, std::move(enqueued), last_done);
}

// Enqueues one request's whole forward and the copy of its letter logits into pinned memory
// (returned; valid until the next pass starts), between `events`.
const float* cuda_backend::enqueue_request(const gpu::forward_context& ctx,
                                           const prepared_request& request,
                                           const pack_events& events) {
  const model_config& config = weights_->config;

  check_cuda(cudaEventRecord(events.start.get(), stream_), "cudaEventRecord");
  const float* features =
      vision_graphs_.encode(ctx, config.vision, device_weights_->vision, request.pixels);
  const gpu::run_images image =
      gpu::one_image(features, gpu::image_feature_rows(config.vision, request.pixels.grid));
  check_cuda(cudaEventRecord(events.vision_done.get(), stream_), "cudaEventRecord");

  const size_t letters = letter_count(request);
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
  std::vector<const prepared_question*> questions;
  for (const prepared_question& question : request.questions) questions.push_back(&question);
  int64_t start = 0;  // where the next segment starts and which GDN state it resumes
  gpu::gdn_slot resume = gpu::gdn_slot::none;
  if (opening > 0) {
    graphs_.enqueue_opening(ctx, config, device_weights_->language, request.questions.front(),
                            opening, image);
    start = opening;
    resume = gpu::gdn_slot::opening;
  }
  if (shared > start) {
    graphs_.enqueue(ctx, config, device_weights_->language, std::span(questions).first(1),
                    gpu::segment{start, {shared - start}, resume, gpu::gdn_slot::prefix, false},
                    image, nullptr);
    start = shared;
    resume = gpu::gdn_slot::prefix;
  }
  size_t offset = 0;
  for (const question_batch& batch : batches) {
    const auto batch_questions = std::span(questions).subspan(batch.first, batch.count);
    gpu::segment part{start, {}, resume, gpu::gdn_slot::none, true};
    for (const prepared_question* question : batch_questions)
      part.lengths.push_back(int64_t(question->input_ids.size()) - start);
    graphs_.enqueue(ctx, config, device_weights_->language, batch_questions, part, image,
                    logits.get() + offset);
    for (const prepared_question* question : batch_questions) offset += question->letter_ids.size();
  }
  // Device buffers are freed stream-ordered as they go out of scope: after the work above.
  return copy_logits_back(logits, letters, events);
}

const float* cuda_backend::copy_logits_back(const gpu::device_buffer<float>& logits,
                                            size_t letters, const pack_events& events) {
  float* host_logits = staging_.reserve<float>(letters);
  check_cuda(cudaMemcpyAsync(host_logits, logits.get(), letters * sizeof(float),
                             cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (logits)");
  check_cuda(cudaEventRecord(events.done.get(), stream_), "cudaEventRecord");
  return host_logits;
}

// Enqueues a pack (prep/request_packs.hpp): the vision encoder over all its images in one pass,
// their features back to back, then one language pass of every question after the opening the
// pack shares, each a run resuming from the opening's state; both eagerly (a pack's shape seldom
// comes again); one copy of all letter logits into pinned memory. Returns each request's logits
// there.
std::vector<const float*> cuda_backend::enqueue_pack(
    const gpu::forward_context& ctx, std::span<const prepared_request* const> requests,
    const pack_events& events) {
  const model_config& config = weights_->config;
  const int64_t hidden = config.vision.out_hidden_size;

  check_cuda(cudaEventRecord(events.start.get(), stream_), "cudaEventRecord");
  // The pack's own image plans, one per size: the vision graph cache keeps at most 4, and an
  // entry evicted while the pack is enqueued would free its tables (stream-ordered, but before
  // the encoder enqueued after it reads them). And each image's uploaded input.
  std::vector<gpu::image_plan> plans;
  std::vector<gpu::device_buffer<uint8_t>> inputs;
  std::vector<gpu::encoder_image> images;
  std::vector<size_t> plan_of;
  for (const prepared_request* request : requests) {
    size_t p = 0;
    while (p < plans.size() && !plans[p].fits(request->pixels)) ++p;
    if (p == plans.size())
      plans.push_back(gpu::make_image_plan(ctx, config.vision, request->pixels));
    plan_of.push_back(p);
  }
  gpu::run_images features{nullptr, {}, {}};
  std::vector<const prepared_question*> questions;
  int64_t feature_rows = 0;
  for (size_t m = 0; m < requests.size(); ++m) {
    const gpu::image_plan& plan = plans[plan_of[m]];
    inputs.emplace_back(plan.input_bytes(config.vision), stream_);
    gpu::upload_image(ctx, plan, requests[m]->pixels, inputs.back().get());
    images.push_back({&plan, inputs.back().get()});
    const int64_t rows = gpu::image_feature_rows(config.vision, plan.grid);
    for (const prepared_question& question : requests[m]->questions) {
      questions.push_back(&question);
      features.first_row.push_back(feature_rows);
      features.rows.push_back(rows);
    }
    feature_rows += rows;
  }
  gpu::device_buffer<float> feature_buffer(size_t(feature_rows * hidden), stream_);
  features.features = feature_buffer.get();
  gpu::enqueue_encoder(ctx, config.vision, device_weights_->vision, images, feature_buffer.get());
  check_cuda(cudaEventRecord(events.vision_done.get(), stream_), "cudaEventRecord");

  const int64_t opening = opening_rows();
  gpu::segment part{opening, {}, opening > 0 ? gpu::gdn_slot::opening : gpu::gdn_slot::none,
                    gpu::gdn_slot::none, true};
  size_t letters = 0;
  for (const prepared_question* question : questions) {
    part.lengths.push_back(int64_t(question->input_ids.size()) - opening);
    letters += question->letter_ids.size();
  }
  graphs_.reserve_rows(config.text, opening + part.tokens(), stream_);
  if (opening > 0)
    graphs_.enqueue_opening(
        ctx, config, device_weights_->language, *questions.front(), opening,
        {features.features, {features.first_row.front()}, {features.rows.front()}});
  gpu::device_buffer<float> logits(letters, stream_);
  graphs_.enqueue_eagerly(ctx, config, device_weights_->language, questions, part, features,
                          logits.get());
  const float* host_logits = copy_logits_back(logits, letters, events);

  std::vector<const float*> answers;
  size_t offset = 0;
  for (const prepared_request* request : requests) {
    answers.push_back(host_logits + offset);
    offset += letter_count(*request);
  }
  return answers;
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
    made->check_pass_budgets();
    // Pictures decoded from now on land in pinned memory the backend uploads from directly.
    use_picture_memory(&gpu::pinned_pictures::instance());
    return std::unique_ptr<backend>(std::move(made));
  } catch (const std::exception& error) {
    return failure{500, std::string("cuda backend: ") + error.what()};
  }
}

}  // namespace cua_s1
