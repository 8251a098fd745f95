// Text prefill: embedding + image scatter, Gated DeltaNet / gated attention layers with SwiGLU
// MLPs, final norm of the last row, letter readout.
#include "gpu/language_forward.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/elementwise.hpp"
#include "kernels/embedding.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/gated_deltanet.hpp"
#include "kernels/norms.hpp"
#include "model/rope.hpp"

namespace cua_s1::gpu {
namespace {

// Per token: the embedding row (id >= 0) or image row r (-r - 1): the question's image pads take
// rows [first_row, first_row + image_rows); validated like the CPU backend.
std::vector<int32_t> token_sources(const model_config& config, int64_t vocab,
                                   const prepared_question& question, int64_t first_row,
                                   int64_t image_rows) {
  std::vector<int32_t> sources;
  sources.reserve(question.input_ids.size());
  int64_t image_row = 0;
  for (const int32_t id : question.input_ids) {
    if (id < 0 || id >= vocab) throw std::invalid_argument("token id outside the vocabulary");
    if (id == config.image_token_id) {
      if (image_row == image_rows) throw std::invalid_argument("more image pads than features");
      sources.push_back(int32_t(-(first_row + image_row) - 1));
      ++image_row;
    } else {
      sources.push_back(id);
    }
  }
  if (image_row != image_rows) throw std::invalid_argument("fewer image pads than features");
  return sources;
}

struct rotary_view {
  const float* cos;
  const float* sin;
  int64_t half;
};

// Where one GDN layer's segment state lives in the cache and which way it flows.
struct deltanet_state {
  const float* recurrent_in;  // null: zero state, the start of the prompt
  const float* history_in;
  float* recurrent_out;       // null: the state at the end is not kept
  float* history_out;
};

// Layer d's state buffers for the segment's slots.
deltanet_state deltanet_state_of(prompt_cache& cache, size_t d, const segment& part) {
  if (part.resume != gdn_slot::none && part.resume == part.keep)
    throw std::logic_error("a segment resumes and keeps the same GDN slot");
  deltanet_state state{nullptr, nullptr, nullptr, nullptr};
  if (part.resume != gdn_slot::none) {
    state.recurrent_in = cache.recurrent.at(size_t(part.resume)).at(d).get();
    state.history_in = cache.conv_history.at(size_t(part.resume)).at(d).get();
  }
  if (part.keep != gdn_slot::none) {
    state.recurrent_out = cache.recurrent.at(size_t(part.keep)).at(d).get();
    state.history_out = cache.conv_history.at(size_t(part.keep)).at(d).get();
  }
  return state;
}

// Where a layer's sequence mixing adds its output projection: into every row of h, or (the
// model's last layer, whose other rows nothing reads) into `h` holding only each run's last row
// (`last_rows`), or nowhere (a segment without a readout: only its K/V rows and GDN state last).
struct mixing_output {
  float* h;
  bool last_rows;
};

// out_proj(x) added to the rows `target` keeps; x has `width` columns for every row of `runs`.
void add_output_projection(const forward_context& ctx, const device_linear& out_proj,
                           const bf16* x, int64_t width, const kernels::row_runs& runs,
                           int64_t hidden, const mixing_output& target) {
  if (!target.h) return;
  if (!target.last_rows) return ctx.linear(out_proj, x, runs.rows(), target.h, hidden, true);
  device_buffer<bf16> last(size_t(runs.count * width), ctx.stream);
  kernels::copy_last_rows(x, width * int64_t(sizeof(bf16)), runs, width * int64_t(sizeof(bf16)),
                          last.get(), ctx.stream);
  ctx.linear(out_proj, last.get(), runs.count, target.h, hidden, true);
}

void run_deltanet(const forward_context& ctx, const text_config& config,
                  const device_deltanet& layer, const deltanet_state& state, const bf16* x,
                  const kernels::row_runs& runs, const mixing_output& h) {
  const int64_t tokens = runs.rows();
  const cudaStream_t s = ctx.stream;
  const int64_t key_heads = config.linear_num_key_heads, value_heads = config.linear_num_value_heads;
  const int64_t key_dim = config.linear_key_head_dim, value_dim = config.linear_value_head_dim;
  const int64_t q_width = key_heads * key_dim, v_width = value_heads * value_dim;
  const int64_t channels = 2 * q_width + v_width;

  // One row per token: [qkv (channels) | z (v_width) | b (value_heads) | a (value_heads)].
  const int64_t width = channels + v_width + 2 * value_heads;
  device_buffer<float> projected(size_t(tokens * width), s);
  ctx.stacked_linear(layer.in_proj,
                     {&layer.in_proj_qkv, &layer.in_proj_z, &layer.in_proj_b, &layer.in_proj_a},
                     x, tokens, projected.get());
  const float* const u = projected.get();
  const float* const z = u + channels;
  const float* const b = z + v_width;
  const float* const a = b + value_heads;

  device_buffer<float> c(size_t(tokens * channels), s);
  const int64_t kernel = config.linear_conv_kernel_dim;
  kernels::conv_qk_norm norm;  // q and k heads L2-normalised, q also scaled by 1/sqrt(d)
  norm.q_width = q_width;
  norm.head_dim = key_dim;
  norm.q_scale = 1.0f / std::sqrt(float(key_dim));
  kernels::causal_conv_silu(u, width, runs, channels, layer.conv1d, kernel, state.history_in,
                            c.get(), s, &norm);
  if (state.history_out) {
    if (runs.count != 1) throw std::logic_error("only a single run keeps the GDN state");
    kernels::conv_history_after(u, width, runs, channels, kernel, state.history_in, 0,
                                state.history_out, 0, s);
  }
  device_buffer<float> beta(size_t(tokens * value_heads), s), g(size_t(tokens * value_heads), s);
  kernels::deltanet_gates(b, a, width, layer.a_log, layer.dt_bias, tokens, value_heads,
                          beta.get(), g.get(), s);

  device_buffer<float> o(size_t(tokens * v_width), s);
  kernels::delta_rule_args rule;
  rule.qkv = c.get();
  rule.ld = channels;
  rule.q_offset = 0;
  rule.k_offset = q_width;
  rule.v_offset = 2 * q_width;
  rule.beta = beta.get();
  rule.log_decay = g.get();
  rule.tokens = tokens;
  rule.key_heads = key_heads;
  rule.value_heads = value_heads;
  rule.key_dim = key_dim;
  rule.value_dim = value_dim;
  rule.out = o.get();
  rule.state_in = state.recurrent_in;
  rule.state_out = state.recurrent_out;
  rule.runs = runs;
  device_buffer<float> scratch(
      kernels::delta_rule_scratch_floats(runs, value_heads, key_dim, value_dim), s);
  rule.scratch = scratch.get();
  kernels::gated_delta_rule(rule, s);

  if (!h.h) return;
  device_buffer<bf16> normed(size_t(tokens * v_width), s);
  kernels::gated_rms_norm_to_bf16(o.get(), z, width, value_heads, tokens * value_heads, value_dim,
                                  layer.norm, config.rms_norm_eps, normed.get(), s);
  add_output_projection(ctx, layer.out_proj, normed.get(), v_width, runs, config.hidden_size, h);
}

// K/V rows of the prompt: the `start` rows before the segment (shared by its runs), then the
// segment's rows, run after run.
struct attention_cache {
  bf16* keys;
  bf16* values;
  int64_t start;
};

void run_attention_layer(const forward_context& ctx, const text_config& config,
                         const device_attention& layer, const rotary_view& rotary,
                         const attention_cache& cache, const bf16* x,
                         const kernels::row_runs& runs, const mixing_output& h) {
  const cudaStream_t s = ctx.stream;
  const int64_t tokens = runs.rows(), hidden = config.hidden_size;
  const int64_t head_dim = config.head_dim;
  const int64_t heads = config.num_attention_heads, kv_heads = config.num_key_value_heads;
  const int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;

  // Every row's keys and values go to the cache.
  device_buffer<float> k(size_t(tokens * kv_width), s), v(size_t(tokens * kv_width), s);
  ctx.linear(layer.k_proj, x, tokens, k.get(), kv_width, false);
  ctx.linear(layer.v_proj, x, tokens, v.get(), kv_width, false);
  bf16* const k_ready = cache.keys + cache.start * kv_width;
  bf16* const v_ready = cache.values + cache.start * kv_width;
  kernels::head_norm_rope_args prep;
  prep.in = k.get();
  prep.ld_in = kv_width;
  prep.head_stride = head_dim;
  prep.tokens = tokens;
  prep.heads = kv_heads;
  prep.head_dim = head_dim;
  prep.weight = layer.k_norm;
  prep.eps = config.rms_norm_eps;
  prep.cos = rotary.cos;
  prep.sin = rotary.sin;
  prep.half = rotary.half;
  prep.out = k_ready;
  kernels::head_norm_rope_to_bf16(prep, s);
  kernels::f32_to_bf16(v.get(), v_ready, tokens * kv_width, s);
  if (!h.h) return;  // only the K/V rows are wanted

  // The model's last layer over one run wants the last row's query alone; it sees every key.
  const bool last_query = h.last_rows && runs.count == 1;
  const int64_t queries = last_query ? 1 : tokens;
  device_buffer<bf16> last_x;
  if (last_query) {
    last_x = device_buffer<bf16>(size_t(hidden), s);
    kernels::copy_last_rows(x, hidden * int64_t(sizeof(bf16)), runs, hidden * int64_t(sizeof(bf16)),
                            last_x.get(), s);
  }
  device_buffer<float> qg(size_t(queries * 2 * q_width), s);
  ctx.linear(layer.q_proj, last_query ? last_x.get() : x, queries, qg.get(), 2 * q_width, false);
  device_buffer<bf16> q_ready(size_t(queries * q_width), s);
  prep.in = qg.get();
  prep.ld_in = 2 * q_width;
  prep.head_stride = 2 * head_dim;  // q_proj rows are [q | gate] per head
  prep.tokens = queries;
  prep.heads = heads;
  prep.weight = layer.q_norm;
  prep.cos = rotary.cos + (tokens - queries) * rotary.half;
  prep.sin = rotary.sin + (tokens - queries) * rotary.half;
  prep.out = q_ready.get();
  kernels::head_norm_rope_to_bf16(prep, s);

  device_buffer<float> attended(size_t(queries * q_width), s);
  kernels::attention_problem problem;
  problem.q = q_ready.get();
  problem.ldq = q_width;
  problem.k = cache.keys;
  problem.ldk = kv_width;
  problem.v = cache.values;
  problem.ldv = kv_width;
  problem.out = attended.get();
  problem.ldo = q_width;
  problem.tokens = queries;
  // Every run sees the cached rows before the segment, then its own rows; the last query alone
  // sees all rows before it as that prefix, then its own.
  problem.keys = last_query ? cache.start + tokens - 1 : cache.start;
  problem.runs = last_query ? kernels::single_run(1) : runs;
  problem.q_heads = heads;
  problem.kv_heads = kv_heads;
  problem.head_dim = head_dim;
  problem.scale = 1.0f / std::sqrt(float(head_dim));
  problem.causal = true;
  kernels::flash_attention(problem, s);

  device_buffer<bf16> gated(size_t(queries * q_width), s);
  kernels::attention_gate_to_bf16(attended.get(), qg.get(), queries, heads, head_dim, gated.get(), s);
  if (last_query)
    ctx.linear(layer.o_proj, gated.get(), 1, h.h, hidden, true);
  else
    add_output_projection(ctx, layer.o_proj, gated.get(), q_width, runs, hidden, h);
}

void run_mlp(const forward_context& ctx, const text_config& config, const device_layer& layer,
             const bf16* x, int64_t tokens, float* h) {
  const cudaStream_t s = ctx.stream;
  const int64_t inner = config.intermediate_size;
  device_buffer<bf16> product(size_t(tokens * inner), s);
  if (!layer.gate_proj.lora.rank && !layer.up_proj.lora.rank) {
    // Without a LoRA branch of their own (merged at load) gate and up leave the product in bf16,
    // as the reference's bf16 Linears do: half the bytes written and read again.
    device_buffer<bf16> gate_up(size_t(tokens * 2 * inner), s);  // row t: [gate_t | up_t]
    ctx.linear_to_bf16(layer.gate_proj, x, tokens, gate_up.get(), 2 * inner);
    ctx.linear_to_bf16(layer.up_proj, x, tokens, gate_up.get() + inner, 2 * inner);
    kernels::silu_mul_to_bf16(gate_up.get(), gate_up.get() + inner, 2 * inner, product.get(),
                              tokens, inner, s);
  } else {
    device_buffer<float> gate_up(size_t(tokens * 2 * inner), s);
    ctx.linear(layer.gate_proj, x, tokens, gate_up.get(), 2 * inner, false);
    ctx.linear(layer.up_proj, x, tokens, gate_up.get() + inner, 2 * inner, false);
    kernels::silu_mul_to_bf16(gate_up.get(), gate_up.get() + inner, 2 * inner, product.get(),
                              tokens, inner, s);
  }
  ctx.linear(layer.down_proj, product.get(), tokens, h, config.hidden_size, true);
}

}  // namespace

prompt_cache make_prompt_cache(const text_config& config, int64_t capacity, cudaStream_t stream) {
  const int64_t kv_width = config.num_key_value_heads * config.head_dim;
  const int64_t value_columns = config.linear_num_value_heads * config.linear_value_head_dim;
  const int64_t channels =
      2 * config.linear_num_key_heads * config.linear_key_head_dim + value_columns;
  prompt_cache cache;
  cache.capacity = capacity;
  for (int64_t i = 0; i < config.num_hidden_layers; ++i)
    if (config.full_attention.at(size_t(i))) {
      cache.keys.emplace_back(size_t(capacity * kv_width), stream);
      cache.values.emplace_back(size_t(capacity * kv_width), stream);
    } else {
      for (size_t slot = 0; slot < gdn_slots; ++slot) {
        cache.recurrent[slot].emplace_back(size_t(value_columns * config.linear_key_head_dim),
                                           stream);
        cache.conv_history[slot].emplace_back(
            size_t((config.linear_conv_kernel_dim - 1) * channels), stream);
      }
    }
  return cache;
}

int64_t segment::tokens() const {
  int64_t sum = 0;
  for (const int64_t length : lengths) sum += length;
  return sum;
}

language_inputs upload_language_inputs(const forward_context& ctx, const model_config& model,
                                       const device_language& weights,
                                       std::span<const prepared_question* const> questions,
                                       const segment& part, const run_images& images,
                                       prompt_cache& cache, language_buffers& buffers) {
  const text_config& config = model.text;
  const cudaStream_t s = ctx.stream;
  const int64_t hidden = config.hidden_size;
  if (questions.size() != part.lengths.size())
    throw std::invalid_argument("one question per run of the segment");
  if (images.first_row.size() != images.rows.size() ||
      (images.rows.size() != 1 && images.rows.size() != questions.size()))
    throw std::invalid_argument("one image for every run or one for each");
  const kernels::row_runs runs = kernels::runs_of(part.lengths);
  const int64_t tokens = runs.rows();
  if (part.start < 0 || part.start + tokens > cache.capacity)
    throw std::invalid_argument("the prompt cache is too small for the segment");

  mrope_positions positions;
  std::vector<int32_t> sources;
  std::vector<int32_t> letters(questions.size() * max_letters);
  for (size_t r = 0; r < questions.size(); ++r) {
    const prepared_question& question = *questions[r];
    const int64_t prompt = int64_t(question.input_ids.size()), length = part.lengths[r];
    if (prompt == 0 || question.positions.axes[0].size() != size_t(prompt))
      throw std::invalid_argument("positions do not match the prompt");
    if (part.start + length > prompt) throw std::invalid_argument("the segment lies outside the prompt");
    if (question.letter_ids.empty() || question.letter_ids.size() > max_letters)
      throw std::invalid_argument("a question needs 1 to 26 letters");
    for (size_t axis = 0; axis < 3; ++axis)
      positions.axes[axis].insert(positions.axes[axis].end(),
                                  question.positions.axes[axis].begin() + part.start,
                                  question.positions.axes[axis].begin() + part.start + length);
    const size_t image = images.rows.size() == 1 ? 0 : r;
    const std::vector<int32_t> all = token_sources(model, weights.vocab, question,
                                                   images.first_row[image], images.rows[image]);
    sources.insert(sources.end(), all.begin() + part.start, all.begin() + part.start + length);
    // Every letter slot is read out (the unused ones repeat letter 0), so a captured graph
    // serves any option count.
    const auto slots = letters.begin() + ptrdiff_t(r * max_letters);
    std::fill(slots, slots + max_letters, question.letter_ids.front());
    std::copy(question.letter_ids.begin(), question.letter_ids.end(), slots);
  }
  const rotary_table table =
      text_rotary(positions, config.rotary_dim(), config.rope_theta, config.mrope_section);
  if (buffers.tokens != tokens || buffers.runs != questions.size()) {
    buffers.h = device_buffer<float>(size_t(tokens * hidden), s);
    buffers.cos = device_buffer<float>(table.cos.size(), s);
    buffers.sin = device_buffer<float>(table.sin.size(), s);
    buffers.letters = device_buffer<int32_t>(letters.size(), s);
    buffers.logits = device_buffer<float>(letters.size(), s);
    buffers.tokens = tokens;
    buffers.runs = questions.size();
  }
  device_buffer<int32_t> device_sources(size_t(tokens), s);
  ctx.upload(sources.data(), size_t(tokens), device_sources.get());
  kernels::embed_tokens(weights.embed_tokens, images.features, device_sources.get(), tokens,
                        hidden, buffers.h.get(), s);
  ctx.upload(table.cos.data(), table.cos.size(), buffers.cos.get());
  ctx.upload(table.sin.data(), table.sin.size(), buffers.sin.get());
  ctx.upload(letters.data(), letters.size(), buffers.letters.get());

  language_inputs inputs;
  inputs.part = part;
  inputs.runs = runs;
  inputs.cache = &cache;
  inputs.h = buffers.h.get();
  inputs.cos = buffers.cos.get();
  inputs.sin = buffers.sin.get();
  inputs.half = table.half;
  inputs.letters = buffers.letters.get();
  inputs.logits = buffers.logits.get();
  return inputs;
}

void enqueue_layers_and_readout(const forward_context& ctx, const model_config& model,
                                const device_language& weights, const language_inputs& in) {
  const text_config& config = model.text;
  const cudaStream_t s = ctx.stream;
  const int64_t hidden = config.hidden_size, tokens = in.runs.rows();
  float* h = in.h;
  ctx.report("language.embeddings", h, tokens, hidden);
  const rotary_view rotary{in.cos, in.sin, in.half};

  device_buffer<bf16> normed(size_t(tokens * hidden), s);
  prompt_cache& cache = *in.cache;
  const int runs = in.runs.count;
  // After the last layer's sequence mixing only each run's last row is read (every row in a plan
  // that wants them all; none in a segment without a readout): its output projection, MLP and
  // the final norm run on those rows alone, packed in `last_rows`.
  device_buffer<float> last_rows;
  size_t attention_layers = 0, deltanet_layers = 0;
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const device_layer& layer = weights.layers[i];
    const bool cut = i + 1 == weights.layers.size() && !ctx.plan.last_layer_all_rows;
    kernels::rms_norm_zero_centred(h, tokens, hidden, hidden, layer.input_norm.weight,
                                   config.rms_norm_eps, normed.get(), nullptr, s);
    mixing_output target{h, false};
    if (cut && !in.part.readout) {
      target.h = nullptr;
    } else if (cut) {
      last_rows = device_buffer<float>(size_t(runs * hidden), s);
      kernels::copy_last_rows(h, hidden * int64_t(sizeof(float)), in.runs,
                              hidden * int64_t(sizeof(float)), last_rows.get(), s);
      target = {last_rows.get(), true};
    }
    if (layer.full_attention) {
      const size_t a = attention_layers++;
      run_attention_layer(ctx, config, layer.attention, rotary,
                          {cache.keys.at(a).get(), cache.values.at(a).get(), in.part.start},
                          normed.get(), in.runs, target);
    } else {
      const size_t d = deltanet_layers++;
      run_deltanet(ctx, config, layer.deltanet, deltanet_state_of(cache, d, in.part),
                   normed.get(), in.runs, target);
    }
    if (!target.h) return;
    const int64_t rows = target.last_rows ? runs : tokens;
    kernels::rms_norm_zero_centred(target.h, rows, hidden, hidden, layer.post_attention_norm.weight,
                                   config.rms_norm_eps, normed.get(), nullptr, s);
    run_mlp(ctx, config, layer, normed.get(), rows, target.h);
    ctx.report("language.layers." + std::to_string(i), h, tokens, hidden);
  }

  if (!in.part.readout) return;
  // Final norm: every row when the plan wants them all (a stage report), else each run's last
  // row alone.
  const bool all_rows = ctx.plan.last_layer_all_rows;
  const int64_t final_count = all_rows ? tokens : runs;
  const float* final_in = last_rows.get() ? last_rows.get() : h;
  device_buffer<float> final_rows(size_t(final_count * hidden), s);
  kernels::rms_norm_zero_centred(final_in, final_count, hidden, hidden, weights.final_norm.weight,
                                 config.rms_norm_eps, nullptr, final_rows.get(), s);
  if (all_rows) ctx.report("language.norm", final_rows.get(), tokens, hidden);
  for (int r = 0; r < runs; ++r) {
    const int64_t row = all_rows ? in.runs.bounds[r + 1] - 1 : r;
    kernels::letter_logits(final_rows.get() + row * hidden, weights.embed_tokens,
                           in.letters + r * max_letters, max_letters, hidden,
                           in.logits + r * max_letters, s);
  }
}

void enqueue_segment(const forward_context& ctx, const model_config& model,
                     const device_language& weights,
                     std::span<const prepared_question* const> questions, const segment& part,
                     const run_images& images, prompt_cache& cache, float* logits) {
  language_buffers buffers;
  const language_inputs inputs =
      upload_language_inputs(ctx, model, weights, questions, part, images, cache, buffers);
  enqueue_layers_and_readout(ctx, model, weights, inputs);
  copy_letter_logits(ctx, questions, inputs, logits);
}

void copy_letter_logits(const forward_context& ctx,
                        std::span<const prepared_question* const> questions,
                        const language_inputs& inputs, float* logits) {
  if (!inputs.part.readout) return;
  size_t offset = 0;
  for (size_t r = 0; r < questions.size(); ++r) {
    const size_t count = questions[r]->letter_ids.size();
    check_cuda(cudaMemcpyAsync(logits + offset, inputs.logits + r * max_letters,
                               count * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream),
               "cudaMemcpyAsync (logits)");
    offset += count;
  }
}

}  // namespace cua_s1::gpu
