// One language prefill on the GPU (spec/model.md 4): fp32 residual stream, bf16 GEMM inputs,
// letter logits read from the last position only.
#pragma once

#include <array>
#include <compare>
#include <span>
#include <vector>

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "kernels/row_runs.hpp"
#include "model/model_config.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1::gpu {

constexpr int64_t max_letters = 26;

// Where a segment's GDN layers take their state from and leave it in the prompt cache: the
// prompt's opening (its first GDN chunk, the same system text in every request, kept between
// requests) or this request's shared prefix.
enum class gdn_slot : int8_t { none = -1, opening = 0, prefix = 1 };
constexpr size_t gdn_slots = 2;

// What the layer stack keeps for the next segment of the same prompt: per attention layer the
// K/V rows (bf16, after the k norm and rotary), per GDN layer and slot the fp32 recurrent state
// and the last kernel - 1 conv inputs. Long-lived, so that captured graphs may point into it.
struct prompt_cache {
  int64_t capacity = 0;                            // K/V rows
  std::vector<device_buffer<bf16>> keys, values;   // per attention layer [capacity, kv_width]
  // [slot][GDN layer]: [v_heads * v_dim, k_dim] and [kernel - 1, channels]
  std::array<std::vector<device_buffer<float>>, gdn_slots> recurrent, conv_history;
  // The token ids whose K/V rows [0, size) and GDN state (slot opening) the cache holds.
  std::vector<int32_t> opening;
};
prompt_cache make_prompt_cache(const text_config& config, int64_t capacity, cudaStream_t stream);

// One pass of the layer stack over prompt positions [start, start + lengths[r]) of one or more
// questions, stacked row-wise as runs (kernels/row_runs.hpp): the questions' suffixes after a
// shared prefix, or the prompts of several requests after the opening they share, go through
// every GEMM together. Attention layers write run r's K/V rows into
// the cache at rows start + (the lengths before r) and each run reads the cache's first `start`
// rows followed by its own.
struct segment {
  int64_t start = 0;
  std::vector<int64_t> lengths;  // rows of each question, 1 to kernels::max_runs of them
  gdn_slot resume = gdn_slot::none;  // GDN layers continue this state (left by a pass to start)
  gdn_slot keep = gdn_slot::none;    // GDN layers leave their state at the end here (one run only)
  bool readout = true;   // letter logits of each run's last position
  int64_t tokens() const;
  auto operator<=>(const segment&) const = default;
};

// The image feature rows on the device ([rows, hidden]) a segment's image pads take: run r's
// pads take rows first_row[r] onwards, rows[r] of them; a single entry serves every run (the
// questions on one screenshot), one entry per run packs several requests' images.
struct run_images {
  const float* features = nullptr;
  std::vector<int64_t> first_row, rows;
};
inline run_images one_image(const float* features, int64_t rows) {
  return {features, {0}, {rows}};
}

// Device inputs and outputs of the layer stack for one segment shape; reused (and captured
// into a CUDA graph) while the segment stays the same.
struct language_buffers {
  int64_t tokens = 0;
  size_t runs = 0;
  device_buffer<float> h;         // [tokens, hidden] residual stream, filled by the embedding
  device_buffer<float> cos, sin;  // [tokens, rotary_dim / 2]
  device_buffer<int32_t> letters;  // [runs, 26]
  device_buffer<float> logits;     // [runs, 26]
};

struct language_inputs {
  segment part;
  kernels::row_runs runs;
  prompt_cache* cache = nullptr;
  float* h = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t half = 0;
  const int32_t* letters = nullptr;
  float* logits = nullptr;
};

// Enqueues the segment's uploads and embedding into `buffers` (reallocated when the shape
// changes) and returns views of them; questions[r] is run r. The cache must hold start + tokens
// rows.
language_inputs upload_language_inputs(const forward_context& ctx, const model_config& config,
                                       const device_language& weights,
                                       std::span<const prepared_question* const> questions,
                                       const segment& part, const run_images& images,
                                       prompt_cache& cache, language_buffers& buffers);

// The decoder layers and, when the segment reads out, the final norm and the 26-slot letter
// readout of each run: no uploads and only stream-ordered allocations, so it can be captured into
// a graph.
void enqueue_layers_and_readout(const forward_context& ctx, const model_config& config,
                                const device_language& weights, const language_inputs& inputs);

// Enqueues the segment eagerly (image pads take the rows `images` names) and, when it reads
// out, writes each question's letter logits to `logits` (device), question after question.
void enqueue_segment(const forward_context& ctx, const model_config& config,
                     const device_language& weights,
                     std::span<const prepared_question* const> questions, const segment& part,
                     const run_images& images, prompt_cache& cache, float* logits);

// Copies the questions' letter logits of a segment that read out to `logits` (device), question
// after question.
void copy_letter_logits(const forward_context& ctx,
                        std::span<const prepared_question* const> questions,
                        const language_inputs& inputs, float* logits);

}  // namespace cua_s1::gpu
