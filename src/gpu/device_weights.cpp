// Places every tensor in one device allocation (256-byte aligned slots), then copies them:
// bf16 matrices byte for byte, small tensors and LoRA pairs widened to fp32.
#include "gpu/device_weights.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "gpu/cuda_check.hpp"
#include "kernels/lora.hpp"

namespace cua_s1::gpu {
namespace {

int64_t elements_of(const tensor_view& view) {
  int64_t count = 1;
  for (int64_t extent : view.shape) count *= extent;
  return count;
}

uint16_t float_to_bf16_bits(float value) {  // round to nearest even (weights are finite)
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

float bf16_bits_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Records where each tensor goes, then fills the arena in one pass over the jobs.
class arena_plan {
 public:
  // A bf16 matrix [rows, cols]; with `extra_columns` its rows get that many more (filled later
  // on the device).
  const bf16* matrix(const tensor_view& view, int64_t extra_columns = 0) {
    const int64_t count = elements_of(view);
    const int64_t rows = view.shape.empty() ? 1 : view.shape.at(0), cols = count / rows;
    const size_t offset = reserve(size_t(rows * (cols + extra_columns)) * 2);
    jobs_.push_back({offset, [view, count, rows, cols, extra_columns](void* target) {
      const void* source = view.data;
      std::vector<uint16_t> narrowed;
      if (view.type != tensor_view::dtype::bf16) {
        narrowed.resize(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) narrowed[size_t(i)] = float_to_bf16_bits(view.f32()[i]);
        source = narrowed.data();
      }
      if (extra_columns == 0)
        check_cuda(cudaMemcpy(target, source, size_t(count) * 2, cudaMemcpyHostToDevice),
                   "cudaMemcpy (weights)");
      else
        check_cuda(cudaMemcpy2D(target, size_t(cols + extra_columns) * 2, source,
                                size_t(cols) * 2, size_t(cols) * 2, size_t(rows),
                                cudaMemcpyHostToDevice),
                   "cudaMemcpy2D (weights)");
    }});
    return reinterpret_cast<const bf16*>(offset + 1);  // patched in fill()
  }

  const float* floats(const tensor_view& view) {
    const int64_t count = elements_of(view);
    const size_t offset = reserve(size_t(count) * 4);
    jobs_.push_back({offset, [view, count](void* target) {
      std::vector<float> wide(static_cast<size_t>(count));
      if (view.type == tensor_view::dtype::f32)
        std::memcpy(wide.data(), view.data, wide.size() * 4);
      else
        for (int64_t i = 0; i < count; ++i) wide[size_t(i)] = bf16_bits_to_float(view.bf16()[i]);
      check_cuda(cudaMemcpy(target, wide.data(), wide.size() * 4, cudaMemcpyHostToDevice),
                 "cudaMemcpy (weights)");
    }});
    return reinterpret_cast<const float*>(offset + 1);
  }

  // Room for a [3 * rows, cols] bf16 split of a LoRA A, filled on the device after the copies.
  const bf16* split(int64_t rows, int64_t cols) {
    return reinterpret_cast<const bf16*>(reserve(size_t(3 * rows * cols) * 2) + 1);
  }

  size_t bytes() const { return next_; }

  void fill(char* base) {
    for (const job& j : jobs_) j.copy(base + j.offset);
  }

 private:
  struct job {
    size_t offset;
    std::function<void(void*)> copy;
  };
  size_t reserve(size_t bytes) {
    const size_t offset = next_;
    next_ += (bytes + 255) / 256 * 256;
    return offset;
  }
  size_t next_ = 0;
  std::vector<job> jobs_;
};

// Placeholder pointers hold offset + 1 until the arena exists; this turns them into addresses.
template <class T>
void relocate(T*& pointer, char* base) {
  if (pointer) pointer = reinterpret_cast<T*>(base + (reinterpret_cast<uintptr_t>(pointer) - 1));
}

// A Linear's bf16 weight, placed alone (its bias and LoRA come from place_extras), its rows
// `folded` columns wider.
device_linear place_weight(arena_plan& plan, const linear_weights& layer, int64_t folded = 0) {
  device_linear out;
  out.weight = plan.matrix(layer.weight, folded);
  out.out = layer.weight.shape.at(0);
  out.in = elements_of(layer.weight) / out.out;
  out.folded = folded;
  return out;
}

// The bias and LoRA tensors of `layer` into `out`. `split`: also reserve A's bf16 split (the
// layer will run its LoRA branch unmerged).
void place_extras(arena_plan& plan, const linear_weights& layer, bool split, device_linear& out) {
  if (layer.bias) out.bias = plan.floats(*layer.bias);
  if (layer.lora) {
    out.lora.a = plan.floats(layer.lora->a);
    out.lora.b = plan.floats(layer.lora->b);
    out.lora.rank = layer.lora->a.shape.at(0);
    out.lora.scale = layer.lora->scale;
    if (split) out.lora.a_split = plan.split(out.lora.rank, out.in);
  }
}

device_linear place_linear(arena_plan& plan, const linear_weights& layer, bool split = true) {
  device_linear out = place_weight(plan, layer);
  place_extras(plan, layer, split, out);
  return out;
}

// A Linear whose LoRA up projection will be folded into its product: the weight's rows get
// 3 * rank extra columns (fold_vision_lora_b fills them). Without LoRA, a plain Linear.
device_linear place_folded(arena_plan& plan, const linear_weights& layer) {
  if (!layer.lora) return place_linear(plan, layer);
  device_linear out = place_weight(plan, layer, 3 * layer.lora->a.shape.at(0));
  place_extras(plan, layer, true, out);
  return out;
}

// place_folded, plus the bias's own bf16 copy where the model stores it in bf16 (a GELU in the
// product's epilogue, which writes bf16, takes only a bf16 bias; a wider one would be rounded).
device_linear place_folded_gelu(arena_plan& plan, const linear_weights& layer) {
  device_linear out = place_folded(plan, layer);
  if (layer.bias && layer.bias->type == tensor_view::dtype::bf16)
    out.bias_bf16 = plan.matrix(*layer.bias);
  return out;
}

// Linears that read the same input, their weights placed back to back (256-byte multiples: no
// gap) so that, once they carry no LoRA branch, one product of the stacked [sum of outs, in]
// matrix computes them all.
std::vector<device_linear> place_stacked(arena_plan& plan,
                                         std::initializer_list<const linear_weights*> layers,
                                         bool split) {
  std::vector<device_linear> out;
  for (const linear_weights* layer : layers) out.push_back(place_weight(plan, *layer));
  size_t i = 0;
  for (const linear_weights* layer : layers) place_extras(plan, *layer, split, out[i++]);
  return out;
}

// The stacked product of `parts` placed by place_stacked, or an empty Linear when any has a bias
// or a LoRA branch, or their weights are not back to back.
device_linear stacked_view(std::initializer_list<const device_linear*> parts) {
  device_linear whole;
  const bf16* next = nullptr;
  for (const device_linear* part : parts) {
    if (part->bias || part->lora.rank || (next && part->weight != next) ||
        (whole.in && part->in != whole.in))
      return {};
    if (!whole.weight) whole.weight = part->weight;
    whole.in = part->in;
    whole.out += part->out;
    next = part->weight + part->out * part->in;
  }
  return whole;
}

device_norm place_norm(arena_plan& plan, const norm_weights& norm) {
  device_norm out;
  out.weight = plan.floats(norm.weight);
  if (norm.bias) out.bias = plan.floats(*norm.bias);
  return out;
}

void relocate(device_linear& layer, char* base) {
  relocate(layer.weight, base);
  relocate(layer.bias, base);
  relocate(layer.bias_bf16, base);
  relocate(layer.lora.a, base);
  relocate(layer.lora.a_split, base);
  relocate(layer.lora.b, base);
}

// Every Linear of a decoder layer (those of the unused mixer are empty).
std::array<device_linear*, 12> language_linears(device_layer& d) {
  return {&d.attention.q_proj, &d.attention.k_proj, &d.attention.v_proj, &d.attention.o_proj,
          &d.gate_proj,        &d.up_proj,          &d.down_proj,        &d.deltanet.in_proj_qkv,
          &d.deltanet.in_proj_z, &d.deltanet.in_proj_b, &d.deltanet.in_proj_a,
          &d.deltanet.out_proj};
}

void relocate(device_norm& norm, char* base) {
  relocate(norm.weight, base);
  relocate(norm.bias, base);
}

}  // namespace

device_weights::device_weights(const model_weights& weights, bool merge_language_lora) {
  arena_plan plan;
  const vision_weights& v = weights.vision;
  vision.patch_embed = place_linear(plan, v.patch_embed);
  vision.pos_embed = plan.matrix(v.pos_embed);
  for (const vision_block_weights& block : v.blocks) {
    device_vision_block b;
    b.norm1 = place_norm(plan, block.norm1);
    b.norm2 = place_norm(plan, block.norm2);
    b.qkv = place_linear(plan, block.qkv);
    b.proj = place_linear(plan, block.proj);
    b.fc1 = place_folded_gelu(plan, block.fc1);
    b.fc2 = place_folded(plan, block.fc2);
    vision.blocks.push_back(b);
  }
  vision.merger_norm = place_norm(plan, v.merger_norm);
  vision.merger_fc1 = place_linear(plan, v.merger_fc1);
  vision.merger_fc2 = place_linear(plan, v.merger_fc2);

  const language_weights& l = weights.language;
  const bool split = !merge_language_lora;  // merged layers need no split
  language.embed_tokens = plan.matrix(l.embed_tokens);
  language.vocab = l.embed_tokens.shape.at(0);
  for (const decoder_layer_weights& layer : l.layers) {
    device_layer d;
    d.input_norm = place_norm(plan, layer.input_layernorm);
    d.post_attention_norm = place_norm(plan, layer.post_attention_layernorm);
    if (layer.linear_attn) {
      const gated_deltanet_weights& g = *layer.linear_attn;
      const auto in_proj = place_stacked(
          plan, {&g.in_proj_qkv, &g.in_proj_z, &g.in_proj_b, &g.in_proj_a}, split);
      d.deltanet.in_proj_qkv = in_proj[0];
      d.deltanet.in_proj_z = in_proj[1];
      d.deltanet.in_proj_b = in_proj[2];
      d.deltanet.in_proj_a = in_proj[3];
      d.deltanet.out_proj = place_linear(plan, g.out_proj, split);
      d.deltanet.conv1d = plan.floats(g.conv1d);
      d.deltanet.a_log = plan.floats(g.a_log);
      d.deltanet.dt_bias = plan.floats(g.dt_bias);
      d.deltanet.norm = plan.floats(g.norm);
    } else if (layer.self_attn) {
      const gated_attention_weights& a = *layer.self_attn;
      d.full_attention = true;
      d.attention.q_proj = place_linear(plan, a.q_proj, split);
      d.attention.k_proj = place_linear(plan, a.k_proj, split);
      d.attention.v_proj = place_linear(plan, a.v_proj, split);
      d.attention.o_proj = place_linear(plan, a.o_proj, split);
      d.attention.q_norm = plan.floats(a.q_norm);
      d.attention.k_norm = plan.floats(a.k_norm);
    } else {
      throw std::invalid_argument("device_weights: a decoder layer has no token mixer");
    }
    d.gate_proj = place_linear(plan, layer.gate_proj, split);
    d.up_proj = place_linear(plan, layer.up_proj, split);
    d.down_proj = place_linear(plan, layer.down_proj, split);
    language.layers.push_back(d);
  }
  language.final_norm = place_norm(plan, l.final_norm);

  bytes_ = plan.bytes();
  check_cuda(cudaMalloc(&arena_, bytes_), "cudaMalloc (weights)");
  char* base = static_cast<char*>(arena_);
  try {
    plan.fill(base);
  } catch (...) {
    cudaFree(arena_);
    throw;
  }

  relocate(vision.patch_embed, base);
  relocate(vision.pos_embed, base);
  for (device_vision_block& b : vision.blocks) {
    relocate(b.norm1, base);
    relocate(b.norm2, base);
    relocate(b.qkv, base);
    relocate(b.proj, base);
    relocate(b.fc1, base);
    relocate(b.fc2, base);
  }
  relocate(vision.merger_norm, base);
  relocate(vision.merger_fc1, base);
  relocate(vision.merger_fc2, base);
  relocate(language.embed_tokens, base);
  for (device_layer& d : language.layers) {
    relocate(d.input_norm, base);
    relocate(d.post_attention_norm, base);
    for (device_linear* linear : language_linears(d)) relocate(*linear, base);
    relocate(d.deltanet.conv1d, base);
    relocate(d.deltanet.a_log, base);
    relocate(d.deltanet.dt_bias, base);
    relocate(d.deltanet.norm, base);
    relocate(d.attention.q_norm, base);
    relocate(d.attention.k_norm, base);
  }
  relocate(language.final_norm, base);
  split_lora_a();
  fold_vision_lora_b();
  if (merge_language_lora) merge_language_adapters();
  // The MLP's gate and up projections stay two products: stacked, they ran 3-4% slower on the
  // H100 (bench/gemm_bench.cpp, bench/RESULTS.md v7).
  for (device_layer& d : language.layers) {
    if (!d.full_attention)
      d.deltanet.in_proj = stacked_view({&d.deltanet.in_proj_qkv, &d.deltanet.in_proj_z,
                                         &d.deltanet.in_proj_b, &d.deltanet.in_proj_a});
  }
}

void device_weights::split_lora_a() {
  auto split = [](const device_linear& linear) {
    if (linear.lora.a_split)
      kernels::lora_split(linear.lora.a, linear.lora.rank, linear.in,
                          const_cast<bf16*>(linear.lora.a_split), nullptr);
  };
  for (const device_vision_block& b : vision.blocks)
    for (const device_linear* linear : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) split(*linear);
  for (const device_linear* linear :
       {&vision.patch_embed, &vision.merger_fc1, &vision.merger_fc2})
    split(*linear);
  for (device_layer& d : language.layers)
    for (const device_linear* linear : language_linears(d)) split(*linear);
  check_cuda(cudaDeviceSynchronize(), "splitting the LoRA A matrices");
}

void device_weights::fold_vision_lora_b() {
  for (const device_vision_block& b : vision.blocks)
    for (const device_linear* linear : {&b.fc1, &b.fc2})
      if (linear->folded)
        kernels::lora_fold_weight(const_cast<bf16*>(linear->weight), linear->out,
                                  linear->input_columns(), linear->in, linear->lora.b,
                                  linear->lora.rank, linear->lora.scale, nullptr);
  check_cuda(cudaDeviceSynchronize(), "folding the vision LoRA B matrices");
}

void device_weights::merge_language_adapters() {
  for (device_layer& d : language.layers)
    for (device_linear* linear : language_linears(d)) {
      if (!linear->lora.rank) continue;
      kernels::lora_merge(const_cast<bf16*>(linear->weight), linear->out, linear->in,
                          linear->lora.a, linear->lora.b, linear->lora.rank, linear->lora.scale,
                          nullptr);
      linear->lora = {};
    }
  check_cuda(cudaDeviceSynchronize(), "merging the language LoRA");
}

device_weights::~device_weights() {
  if (arena_) cudaFree(arena_);
}

}  // namespace cua_s1::gpu
