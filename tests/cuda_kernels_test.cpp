// The CUDA backend's kernels and GPU steps one by one against CPU and float64 references on fresh
// random inputs: Linears with bias and LoRA, the bf16 MLP products, pixel values and resizing,
// attention with both head sizes at tile edges (causal GQA and bidirectional, the Hopper kernel
// against the portable one, runs over a cached prefix), the GDN conv and delta rule, row norms.
// Skipped, with a message, where no CUDA device is present.
#define BOOST_TEST_MODULE cuda_kernels
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_test_support.hpp"
#include "model/cpu/attention.hpp"
#include "prep/bicubic_resize.hpp"
#include "tiny_parity.hpp"

#ifdef CUA_S1_HAVE_CUDA
#include "gpu/device_buffer.hpp"
#include "gpu/host_staging.hpp"
#include "gpu/picture_resize.hpp"
#include "gpu/pinned_pictures.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_attention_testing.hpp"
#include "kernels/gated_deltanet.hpp"
#include "kernels/lora.hpp"
#include "kernels/norms.hpp"
#include "kernels/vision.hpp"
#endif

using namespace cua_s1;
using namespace cua_s1::test;  // cuda_test_support.hpp: inputs, the device rig, the skip notice
namespace utf = boost::unit_test;
BOOST_TEST_GLOBAL_FIXTURE(cuda_skip_notice);

namespace {

float bf16_round(float x) {  // round to nearest even, as __float2bfloat16_rn
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

#ifdef CUA_S1_HAVE_CUDA
// A device copy of host values.
gpu::device_buffer<float> to_device(const std::vector<float>& host) {
  const cudaStream_t stream = rig().stream;
  gpu::device_buffer<float> copy(host.size(), stream);
  gpu::check_cuda(cudaMemcpyAsync(copy.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice,
                                  stream),
                  "cudaMemcpyAsync");
  gpu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return copy;
}

// `count` values uniform in [low, high).
std::vector<float> random_values(size_t count, float low, float high) {
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> v(count);
  for (float& e : v) e = value(rng());
  return v;
}

// bf16 copies of host values (exact when the values are bf16-representable).
gpu::device_buffer<__nv_bfloat16> to_device_bf16(const std::vector<float>& host) {
  const cudaStream_t stream = rig().stream;
  const gpu::device_buffer<float> wide = to_device(host);
  gpu::device_buffer<__nv_bfloat16> narrow(host.size(), stream);
  kernels::f32_to_bf16(wide.get(), narrow.get(), int64_t(host.size()), stream);
  gpu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return narrow;
}
#endif

}  // namespace

#ifdef CUA_S1_HAVE_CUDA

// One Linear + LoRA configuration of the test below, on the GPU, against `expected` (float64).
// Folded: W gets the LoRA's extra columns (lora_fold_weight) and x's are filled before each
// product (fill_lora_columns); the GELU output is written with a wider row stride.
void check_linear_with_lora(const std::vector<float>& x, const std::vector<float>& w,
                            const std::vector<float>& bias, const std::vector<float>& a,
                            const std::vector<float>& b, int64_t m, int64_t in, int64_t out,
                            int64_t rank, float scale, bool folded,
                            const std::vector<double>& expected, const char* what) {
  const cudaStream_t stream = rig().stream;
  const int64_t columns = in + (folded ? 3 * rank : 0);
  auto widened = [&](const std::vector<float>& rows, int64_t count) {  // rows of `columns`
    std::vector<float> wide(size_t(count * columns), 0.0f);
    for (int64_t r = 0; r < count; ++r)
      std::copy_n(rows.begin() + r * in, in, wide.begin() + r * columns);
    return wide;
  };
  const auto dx = to_device_bf16(widened(x, m)), dw = to_device_bf16(widened(w, out));
  const auto dbias = to_device(bias), da = to_device(a), db = to_device(b);
  gpu::device_buffer<__nv_bfloat16> split(size_t(3 * rank * in), stream);
  kernels::lora_split(da.get(), rank, in, split.get(), stream);
  gpu::device_linear layer;
  layer.weight = dw.get();
  layer.out = out;
  layer.in = in;
  layer.bias = dbias.get();
  layer.lora = {da.get(), split.get(), db.get(), rank, scale};
  if (folded) {
    layer.folded = 3 * rank;
    kernels::lora_fold_weight(dw.get(), out, columns, in, db.get(), rank, scale, stream);
  }
  const gpu::forward_context ctx = rig().context();

  auto relative_error = [&](const std::vector<float>& ours, auto reference) {
    double worst = 0, largest = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      const double e = reference(i);
      worst = std::max(worst, std::abs(ours[i] - e));
      largest = std::max(largest, std::abs(e));
    }
    return worst / largest;
  };
  gpu::device_buffer<float> y(size_t(m * out), stream);
  ctx.fill_lora_columns(layer, dx.get(), m);
  ctx.linear(layer, dx.get(), m, y.get(), out, false);
  const double plain = relative_error(download(y.get(), y.size(), stream),
                                      [&](size_t i) { return expected[i]; });
  std::vector<float> start(size_t(m * out));
  for (size_t i = 0; i < start.size(); ++i) start[i] = float(std::sin(0.37 * double(i)));
  const auto dstart = to_device(start);
  ctx.linear(layer, dx.get(), m, dstart.get(), out, true);
  const double accumulated = relative_error(download(dstart.get(), dstart.size(), stream),
                                            [&](size_t i) { return start[i] + expected[i]; });
  double gelu_error[2] = {};
  const int64_t ldo = folded ? out + 8 : out;  // the folded path writes rows of a wider buffer
  for (const bool tanh_form : {true, false}) {
    gpu::device_buffer<__nv_bfloat16> activated(size_t(m * ldo), stream);
    ctx.linear_gelu(layer, dx.get(), m, activated.get(), tanh_form, ldo);
    const auto rows = download(activated.get(), activated.size(), stream);
    std::vector<float> wide;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < out; ++c) wide.push_back(__bfloat162float(rows[size_t(r * ldo + c)]));
    gelu_error[tanh_form] = relative_error(wide, [&](size_t i) {
      const double v = expected[i];
      return tanh_form ? 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                       : 0.5 * v * (1 + std::erf(v * 0.7071067811865476));
    });
  }
  // The vision MLP's fc1 path: bias (stored bf16) and tanh-GELU in the product's epilogue, against
  // the product in fp32 and the GELU kernel (layer.bias_bf16 unset).
  double epilogue_apart = 0;
  if (folded) {
    const auto dbias_bf16 = to_device_bf16(bias);
    gpu::device_buffer<__nv_bfloat16> fused(size_t(m * ldo), stream), apart(size_t(m * ldo), stream);
    BOOST_TEST_REQUIRE(rig().gemm.linear_gelu(dx.get(), m, columns, columns, dw.get(), out,
                                               fused.get(), ldo, dbias_bf16.get(), stream));
    ctx.linear_gelu(layer, dx.get(), m, apart.get(), true, ldo);
    gpu::device_linear with_bf16_bias = layer;
    with_bf16_bias.bias_bf16 = dbias_bf16.get();
    gpu::device_buffer<__nv_bfloat16> chosen(size_t(m * ldo), stream);
    ctx.linear_gelu(with_bf16_bias, dx.get(), m, chosen.get(), true, ldo);
    const auto f = download(fused.get(), fused.size(), stream);
    const auto p = download(apart.get(), apart.size(), stream);
    const auto c = download(chosen.get(), chosen.size(), stream);
    double largest = 0;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < out; ++col) {
        const size_t i = size_t(r * ldo + col);
        const double fe = __bfloat162float(f[i]), pe = __bfloat162float(p[i]);
        epilogue_apart = std::max(epilogue_apart, std::abs(fe - pe));
        largest = std::max(largest, std::abs(pe));
        BOOST_TEST(__bfloat162float(c[i]) == fe);  // linear_gelu takes the epilogue
      }
    epilogue_apart /= largest;
  }
  BOOST_TEST_MESSAGE(what << (folded ? " (folded)" : "") << ": relative error " << plain
                          << ", accumulated " << accumulated << ", tanh-GELU " << gelu_error[1]
                          << ", erf-GELU " << gelu_error[0] << ", GELU epilogue vs kernel "
                          << epilogue_apart);
  BOOST_TEST(epilogue_apart <= 8e-3);  // one bf16 rounding apart at most
  // Unfolded: fp32 accuracy. Folded: the LoRA branch at about 16 bits (each of its products off
  // by up to ~2^-15 = 3e-5).
  const double bound = folded ? 1e-4 : 1e-5;
  BOOST_TEST(plain <= bound);
  BOOST_TEST(accumulated <= bound);
  BOOST_TEST(gelu_error[1] <= 8e-3);  // one bf16 rounding of the output
  BOOST_TEST(gelu_error[0] <= 8e-3);
}

// A Linear with bias and an unmerged LoRA (the vision MLP's shape of work) against a float64
// evaluation of the same bf16 x, W and fp32 bias, A, B: plain, accumulating onto y, and fused with
// each GELU; the up projection unfolded and folded into the product (there also the GELU in the
// product's epilogue, the bias in bf16 as the model stores it). With W = 0 the output is the
// LoRA branch alone: the tensor-core down projection over A's bf16 split must keep fp32 accuracy
// there (A rounded to bf16 would be off by ~1e-3).
BOOST_AUTO_TEST_CASE(linear_with_bias_and_lora_matches_float64,
                     *utf::precondition(test::cuda_present)) {
  const int64_t m = 37, in = 200, out = 264, rank = 16;
  const float scale = 2.0f;
  std::normal_distribution<float> value(0.0f, 1.0f);
  auto random = [&](size_t count, float std, bool bf16_values) {
    std::vector<float> v(count);
    for (float& e : v) e = bf16_values ? bf16_round(std * value(rng())) : std * value(rng());
    return v;
  };
  const std::vector<float> x = random(size_t(m * in), 1.0f, true), bias = random(size_t(out), 0.5f, true),
                           a = random(size_t(rank * in), 0.07f, false), b = random(size_t(out * rank), 0.05f, false);
  for (const bool zero_weight : {false, true}) {
    BOOST_TEST_CONTEXT((zero_weight ? "W = 0, bias = 0 (the LoRA branch alone)" : "random W")) {
      std::vector<float> w = random(size_t(out * in), 1.0f / std::sqrt(float(in)), true);
      std::vector<float> used_bias = bias;
      if (zero_weight) std::fill(w.begin(), w.end(), 0.0f), std::fill(used_bias.begin(), used_bias.end(), 0.0f);
      std::vector<double> expected(size_t(m * out));
      for (int64_t i = 0; i < m; ++i) {
        double t[rank] = {};
        for (int64_t r = 0; r < rank; ++r)
          for (int64_t k = 0; k < in; ++k) t[r] += double(x[i * in + k]) * a[r * in + k];
        for (int64_t o = 0; o < out; ++o) {
          double sum = used_bias[o];
          for (int64_t k = 0; k < in; ++k) sum += double(x[i * in + k]) * w[o * in + k];
          for (int64_t r = 0; r < rank; ++r) sum += scale * t[r] * b[o * rank + r];
          expected[i * out + o] = sum;
        }
      }
      for (const bool folded : {false, true}) {
        BOOST_TEST_CONTEXT((folded ? "up projection folded into the product" : "unfolded")) {
          check_linear_with_lora(x, w, used_bias, a, b, m, in, out, rank, scale, folded, expected,
                                 zero_weight ? "LoRA alone" : "Linear + LoRA");
        }
      }
    }
  }
}

// The language MLP's gate/up product left in bf16 (merged LoRA): the product equals the fp32
// product rounded once (cuBLASLt may pick another algorithm for a bf16 output: at most one bf16
// step apart), and SiLU-mul from those bf16 values equals SiLU-mul from the same values in fp32,
// bit for bit.
BOOST_AUTO_TEST_CASE(bf16_gate_up_products_and_their_silu_mul,
                     *utf::precondition(test::cuda_present)) {
  const cudaStream_t stream = rig().stream;
  for (const int64_t m : {int64_t(1), int64_t(37), int64_t(300)}) {
    BOOST_TEST_CONTEXT(m << " rows") {
      const int64_t in = 256, inner = 320;
      std::vector<float> x = random_values(size_t(m * in), -1.0f, 1.0f);
      std::vector<float> w = random_values(size_t(2 * inner * in), -0.1f, 0.1f);
      for (float& e : x) e = bf16_round(e);
      for (float& e : w) e = bf16_round(e);
      const auto x_dev = to_device_bf16(x);
      const auto w_dev = to_device_bf16(w);
      gpu::device_linear gate, up;
      gate.weight = w_dev.get();
      up.weight = w_dev.get() + inner * in;
      gate.out = up.out = inner;
      gate.in = up.in = in;
      gpu::forward_context ctx = rig().context();
      gpu::device_buffer<float> wide(size_t(m * 2 * inner), stream);
      gpu::device_buffer<__nv_bfloat16> narrow(size_t(m * 2 * inner), stream);
      ctx.linear(gate, x_dev.get(), m, wide.get(), 2 * inner, false);
      ctx.linear(up, x_dev.get(), m, wide.get() + inner, 2 * inner, false);
      ctx.linear_to_bf16(gate, x_dev.get(), m, narrow.get(), 2 * inner);
      ctx.linear_to_bf16(up, x_dev.get(), m, narrow.get() + inner, 2 * inner);
      const std::vector<float> fp32 = download(wide.get(), wide.size(), stream);
      const std::vector<__nv_bfloat16> bf16 = download(narrow.get(), narrow.size(), stream);
      double worst = 0;
      for (size_t i = 0; i < fp32.size(); ++i) {
        const double ours = __bfloat162float(bf16[i]);
        worst = std::max(worst, std::abs(ours - fp32[i]) / std::max(std::abs(double(fp32[i])), 1e-3));
      }
      BOOST_TEST_MESSAGE(m << " rows: bf16 product against fp32, max relative difference " << worst);
      BOOST_TEST(worst <= 1.0 / 128);  // one bf16 rounding (2^-8 relative) plus order effects

      // SiLU-mul of the bf16 values, and of the same values widened to fp32.
      std::vector<float> widened(bf16.size());
      for (size_t i = 0; i < bf16.size(); ++i) widened[i] = __bfloat162float(bf16[i]);
      const auto widened_dev = to_device(widened);
      gpu::device_buffer<__nv_bfloat16> from_narrow(size_t(m * inner), stream),
          from_wide(size_t(m * inner), stream);
      kernels::silu_mul_to_bf16(narrow.get(), narrow.get() + inner, 2 * inner, from_narrow.get(), m,
                                inner, stream);
      kernels::silu_mul_to_bf16(widened_dev.get(), widened_dev.get() + inner, 2 * inner,
                                from_wide.get(), m, inner, stream);
      const auto a = download(from_narrow.get(), from_narrow.size(), stream);
      const auto b = download(from_wide.get(), from_wide.size(), stream);
      size_t mismatches = 0;
      for (size_t i = 0; i < a.size(); ++i)
        mismatches += __bfloat162float(a[i]) != __bfloat162float(b[i]);
      BOOST_TEST(mismatches == 0u);
    }
  }
}

// pixel values made on the GPU from the 8-bit picture (the server's path) equal the host's
// write_pixel_values rounded to bf16, bit for bit, for per-channel normalizations and several
// grids; and a whole request answered from the picture equals the same request given pixel
// values (the tests above use random pixel values).
BOOST_AUTO_TEST_CASE(pixel_values_made_on_the_gpu_equal_the_host_ones,
                     *utf::precondition(test::cuda_present)) {
  processor_config clip_like;
  clip_like.image_mean = {0.48145466f, 0.4578275f, 0.40821073f};
  clip_like.image_std = {0.26862954f, 0.26130258f, 0.27577711f};
  const cudaStream_t stream = rig().stream;
  for (const processor_config& config : {processor_config{}, clip_like})
    for (const auto& [width, height] : {std::pair<uint32_t, uint32_t>{32, 32}, {96, 64}, {1280, 704}}) {
      BOOST_TEST_CONTEXT(width << "x" << height << ", mean " << config.image_mean[0]) {
        const rgb_image picture = random_picture(width, height);
        const std::vector<float> host = make_pixel_values(picture, config);
        gpu::device_buffer<uint8_t> rgb(picture.pixels.size(), stream);
        gpu::check_cuda(cudaMemcpyAsync(rgb.get(), picture.pixels.data(), picture.pixels.size(),
                                        cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync");
        const grid_thw grid = image_grid_thw(width, height, config);
        kernels::patchify_args args;
        args.rgb = rgb.get();
        args.width = width;
        args.grid_h = grid.h;
        args.grid_w = grid.w;
        args.patch = config.patch_size;
        args.merge = config.merge_size;
        args.temporal = config.temporal_patch_size;
        for (int c = 0; c < 3; ++c)
          args.mean[c] = config.image_mean[c] * 255.0f, args.std[c] = config.image_std[c] * 255.0f;
        gpu::device_buffer<__nv_bfloat16> out(host.size(), stream);
        kernels::patchify_to_bf16(args, out.get(), stream);
        const std::vector<__nv_bfloat16> ours = download(out.get(), host.size(), stream);
        size_t mismatches = 0;
        for (size_t i = 0; i < host.size(); ++i)
          mismatches += __bfloat162float(ours[i]) != bf16_round(host[i]);
        BOOST_TEST(mismatches == 0u);
      }
    }

  // Whole requests: the picture at the grid's size, and one the GPU resizes first (300x100 ->
  // 256x128 on both axes), against the host's pixel values of the host-resized picture.
  auto made = make_cuda_backend(test::parity::load_tiny_weights(), 0);
  BOOST_REQUIRE(made);
  BOOST_TEST(bool((*made)->pixel_values_made() == pixel_values_on::backend));
  for (const auto& [width, height] : {std::pair<uint32_t, uint32_t>{256, 128}, {300, 100}}) {
    BOOST_TEST_CONTEXT("request from a " << width << "x" << height << " picture") {
      const rgb_image picture = random_picture(width, height);
      prepared_request with_values = image_request(8, 16);
      with_values.pixels.pixel_values =
          make_pixel_values(resize_bicubic_antialias(picture, 256, 128), processor_config{});
      prepared_request with_picture = with_values;
      with_picture.pixels.pixel_values.clear();
      with_picture.pixels.picture = picture;
      with_picture.pixels.normalization = {{127.5f, 127.5f, 127.5f}, {127.5f, 127.5f, 127.5f}, 16, 2, 2};
      auto from_values = (*made)->run(with_values);
      auto from_picture = (*made)->run(with_picture);
      BOOST_REQUIRE(from_values && from_picture);
      BOOST_TEST(from_picture->at(0).logits == from_values->at(0).logits,
                 boost::test_tools::per_element());
    }
  }
}

// The GPU resize equals resize_bicubic_antialias byte for byte: down and up, one axis or both,
// the server's common 1280x720 -> 1280x704 and a large downscale.
BOOST_AUTO_TEST_CASE(pictures_resized_on_the_gpu_equal_the_host_ones,
                     *utf::precondition(test::cuda_present)) {
  std::uniform_int_distribution<int> byte(0, 255);
  struct sizes {
    uint32_t from_w, from_h, to_w, to_h;
  };
  for (const sizes z : {sizes{1280, 720, 1280, 704}, sizes{1366, 768, 1376, 768},
                        sizes{300, 100, 256, 128}, sizes{37, 53, 64, 32}, sizes{3000, 2000, 1344, 896},
                        sizes{64, 64, 64, 64}, sizes{1, 1, 32, 32}}) {
    BOOST_TEST_CONTEXT(z.from_w << "x" << z.from_h << " -> " << z.to_w << "x" << z.to_h) {
      rgb_image picture{z.from_w, z.from_h, picture_bytes(size_t(z.from_w) * z.from_h * 3)};
      for (uint8_t& v : picture.pixels) v = uint8_t(byte(rng()));
      const rgb_image expected = resize_bicubic_antialias(picture, z.to_w, z.to_h);
      // The picture's bytes on the heap (uploaded through the staging) and in pinned picture
      // memory (uploaded straight from there, large pictures only).
      gpu::pinned_pictures& pinned = gpu::pinned_pictures::instance();
      for (picture_memory* memory : {static_cast<picture_memory*>(nullptr),
                                     static_cast<picture_memory*>(&pinned)}) {
        picture_allocator<uint8_t> allocator;
        allocator.source = memory;
        const rgb_image copy{picture.width, picture.height,
                             picture_bytes(picture.pixels.begin(), picture.pixels.end(), allocator)};
        BOOST_TEST(pinned.pinned(copy.pixels.data(), copy.pixels.size()) ==
                   (memory && copy.pixels.size() >= min_picture_memory_bytes));
        gpu::forward_context ctx = rig().context();
        rig().staging.reset();
        const gpu::device_buffer<uint8_t> ours = gpu::upload_resized_picture(ctx, copy, z.to_w, z.to_h);
        const std::vector<uint8_t> got = download(ours.get(), expected.pixels.size(), ctx.stream);
        size_t mismatches = 0;
        for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != expected.pixels[i];
        BOOST_TEST(mismatches == 0u, (memory ? "pinned" : "heap") << " picture memory");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(flash_attention_matches_the_cpu,
                     *utf::precondition(test::cuda_present)) {
  struct shape {
    int64_t tokens, keys, heads, kv_heads, dim;  // keys > tokens: a suffix over a cached prefix
    bool causal;
  };
  for (const shape s : {shape{1, 1, 4, 2, 256, true}, shape{63, 63, 4, 2, 256, true},
                        shape{64, 64, 4, 2, 256, true}, shape{65, 65, 4, 2, 256, true},
                        shape{200, 200, 4, 1, 256, true}, shape{700, 700, 16, 4, 256, true},
                        shape{1, 1, 2, 2, 64, false}, shape{65, 65, 2, 2, 64, false},
                        shape{300, 300, 2, 2, 64, false}, shape{1100, 1100, 16, 16, 64, false},
                        shape{129, 129, 4, 2, 64, true}, shape{33, 33, 4, 4, 256, false},
                        shape{1, 700, 16, 4, 256, true}, shape{150, 1059, 16, 4, 256, true},
                        shape{65, 97, 4, 2, 256, true}, shape{40, 130, 2, 2, 64, true}}) {
    BOOST_TEST_CONTEXT(s.tokens << " queries over " << s.keys << " keys, " << s.heads << "/"
                                << s.kv_heads << " heads, causal " << s.causal) {
      const int64_t q_width = s.heads * s.dim, kv_width = s.kv_heads * s.dim;
      std::normal_distribution<float> value(0.0f, 1.0f);
      std::vector<float> q(size_t(s.tokens * q_width)), k(size_t(s.keys * kv_width)),
          v(size_t(s.keys * kv_width));
      for (auto* x : {&q, &k, &v})
        for (float& e : *x) e = bf16_round(value(rng()));
      cpu::attention_shape cpu_shape{s.tokens, s.keys, s.heads, s.kv_heads, s.dim,
                                     1.0f / std::sqrt(float(s.dim)), s.causal};
      std::vector<float> expected(size_t(s.tokens * q_width));
      cpu::attention_runner().run(cpu_shape, q.data(), q_width, k.data(), kv_width, v.data(),
                                  kv_width, expected.data(), q_width);

      const cudaStream_t stream = rig().stream;
      auto dq = to_device_bf16(q), dk = to_device_bf16(k), dv = to_device_bf16(v);
      gpu::device_buffer<float> out(expected.size(), stream);
      kernels::attention_problem problem{dq.get(), q_width, dk.get(), kv_width, dv.get(),
                                         kv_width, out.get(), nullptr, q_width, s.tokens, s.keys,
                                         s.heads, s.kv_heads, s.dim,
                                         1.0f / std::sqrt(float(s.dim)), s.causal, {}};
      kernels::flash_attention(problem, stream);
      const std::vector<float> ours = download(out.get(), expected.size(), stream);
      double diff = 0, norm = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        diff += double(ours[i] - expected[i]) * (ours[i] - expected[i]);
        norm += double(expected[i]) * expected[i];
      }
      const double relative = std::sqrt(diff / std::max(norm, 1e-30));
      BOOST_TEST_MESSAGE("relative error " << relative);
      BOOST_TEST(relative <= 5e-3);  // P is rounded to bf16 before P V

      // The bf16 output is the fp32 output rounded once.
      gpu::device_buffer<__nv_bfloat16> narrow(expected.size(), stream);
      problem.out = nullptr;
      problem.out_bf16 = narrow.get();
      kernels::flash_attention(problem, stream);
      size_t mismatches = 0;
      const std::vector<__nv_bfloat16> rounded = download(narrow.get(), expected.size(), stream);
      for (size_t i = 0; i < ours.size(); ++i)
        mismatches += __bfloat162float(rounded[i]) != bf16_round(ours[i]);
      BOOST_TEST(mismatches == 0u);
    }
  }
}

// On Hopper the vision attention (head size 64, no mask) runs on wgmma: against the portable
// mma.sync kernel at the encoder's sizes (the same arithmetic up to the MMAs' summation order).
BOOST_AUTO_TEST_CASE(hopper_attention_matches_the_portable_kernel,
                     *utf::precondition(test::cuda_present)) {
  const cudaStream_t stream = rig().stream;
  for (const int64_t tokens : {int64_t(1), int64_t(64), int64_t(127), int64_t(129), int64_t(1200),
                               int64_t(3520), int64_t(4096)}) {
    BOOST_TEST_CONTEXT(tokens << " tokens") {
      const int64_t heads = 16, dim = 64, width = heads * dim;
      std::vector<float> qkv = random_values(size_t(tokens * 3 * width), -2, 2);
      for (float& e : qkv) e = bf16_round(e);
      const auto dqkv = to_device_bf16(qkv);
      gpu::device_buffer<float> portable_out(size_t(tokens * width), stream),
          hopper_out(size_t(tokens * width), stream);
      kernels::attention_problem problem;
      problem.q = dqkv.get();
      problem.k = dqkv.get() + width;
      problem.v = dqkv.get() + 2 * width;
      problem.ldq = problem.ldk = problem.ldv = 3 * width;
      problem.ldo = width;
      problem.tokens = tokens;
      problem.q_heads = problem.kv_heads = heads;
      problem.head_dim = dim;
      problem.scale = 0.125f;
      kernels::attention_problem portable = problem;
      portable.out = portable_out.get();
      problem.out = hopper_out.get();
      kernels::flash_attention_portable(portable, stream);
      kernels::flash_attention(problem, stream);
      const std::vector<float> expected = download(portable_out.get(), size_t(tokens * width), stream),
                               ours = download(hopper_out.get(), size_t(tokens * width), stream);
      double diff = 0, norm = 0, largest = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        diff += double(ours[i] - expected[i]) * (ours[i] - expected[i]);
        norm += double(expected[i]) * expected[i];
        largest = std::max(largest, double(std::fabs(ours[i] - expected[i])));
      }
      const double relative = std::sqrt(diff / std::max(norm, 1e-30));
      BOOST_TEST_MESSAGE(tokens << " tokens: relative difference " << relative << ", largest "
                                << largest);
      BOOST_TEST(relative <= 1e-3);  // a few P roundings go the other way
    }
  }
}
#endif

#ifdef CUA_S1_HAVE_CUDA
namespace {

// Rows [first, first + count) of a [rows, width] host matrix.
std::vector<float> rows_of(const std::vector<float>& m, int64_t width, int64_t first, int64_t count) {
  return {m.begin() + first * width, m.begin() + (first + count) * width};
}

}  // namespace

// Suffixes batched as runs over one cached prefix: one launch gives, bit for bit, what each run
// alone gives as a single sequence over the prefix followed by its own keys (both head sizes,
// runs of 1, 63, 64, 65 and 150 rows, causal and not).
BOOST_AUTO_TEST_CASE(attention_runs_equal_each_run_alone,
                     *utf::precondition(test::cuda_present)) {
  const std::vector<int64_t> lengths{1, 63, 64, 65, 150};
  const kernels::row_runs runs = kernels::runs_of(lengths);
  struct shape {
    int64_t prefix, heads, kv_heads, dim;
    bool causal;
  };
  for (const shape s : {shape{128, 4, 2, 256, true}, shape{0, 4, 2, 256, true},
                        shape{70, 2, 2, 64, false}, shape{0, 2, 2, 64, false}}) {
    BOOST_TEST_CONTEXT("prefix " << s.prefix << ", head dim " << s.dim << ", causal " << s.causal) {
      const cudaStream_t stream = rig().stream;
      const int64_t q_width = s.heads * s.dim, kv_width = s.kv_heads * s.dim;
      const int64_t rows = runs.rows(), keys = s.prefix + rows;
      std::vector<float> q = random_values(size_t(rows * q_width), -2, 2),
                         k = random_values(size_t(keys * kv_width), -2, 2),
                         v = random_values(size_t(keys * kv_width), -2, 2);
      for (auto* x : {&q, &k, &v})
        for (float& e : *x) e = bf16_round(e);
      auto dq = to_device_bf16(q), dk = to_device_bf16(k), dv = to_device_bf16(v);
      gpu::device_buffer<float> batched(size_t(rows * q_width), stream);
      kernels::attention_problem problem;
      problem.q = dq.get();
      problem.ldq = q_width;
      problem.k = dk.get();
      problem.ldk = kv_width;
      problem.v = dv.get();
      problem.ldv = kv_width;
      problem.out = batched.get();
      problem.ldo = q_width;
      problem.tokens = rows;
      problem.keys = s.prefix;
      problem.q_heads = s.heads;
      problem.kv_heads = s.kv_heads;
      problem.head_dim = s.dim;
      problem.scale = 1.0f / std::sqrt(float(s.dim));
      problem.causal = s.causal;
      problem.runs = runs;
      kernels::flash_attention(problem, stream);
      const std::vector<float> together = download(batched.get(), size_t(rows * q_width), stream);

      for (int r = 0; r < runs.count; ++r) {
        const int64_t first = runs.bounds[r], length = runs.length(r);
        std::vector<float> run_k = rows_of(k, kv_width, 0, s.prefix), run_v = rows_of(v, kv_width, 0, s.prefix);
        const std::vector<float> own_k = rows_of(k, kv_width, s.prefix + first, length),
                                 own_v = rows_of(v, kv_width, s.prefix + first, length);
        run_k.insert(run_k.end(), own_k.begin(), own_k.end());
        run_v.insert(run_v.end(), own_v.begin(), own_v.end());
        auto rq = to_device_bf16(rows_of(q, q_width, first, length)), rk = to_device_bf16(run_k),
             rv = to_device_bf16(run_v);
        gpu::device_buffer<float> alone(size_t(length * q_width), stream);
        kernels::attention_problem single = problem;
        single.q = rq.get();
        single.k = rk.get();
        single.v = rv.get();
        single.out = alone.get();
        single.tokens = length;
        single.keys = s.prefix + length;
        single.runs = {};
        kernels::flash_attention(single, stream);
        const std::vector<float> expected = download(alone.get(), size_t(length * q_width), stream);
        BOOST_TEST_CONTEXT("run " << r << " (" << length << " rows)") {
          BOOST_TEST(rows_of(together, q_width, first, length) == expected,
                     boost::test_tools::per_element());
        }
      }
    }
  }
}

// The GDN causal conv and the chunked delta rule over runs (each from the same history and
// state) give, bit for bit, what each run gives alone.
BOOST_AUTO_TEST_CASE(deltanet_runs_equal_each_run_alone,
                     *utf::precondition(test::cuda_present)) {
  const std::vector<int64_t> lengths{1, 63, 64, 65, 150, 3};
  const kernels::row_runs runs = kernels::runs_of(lengths);
  const int64_t rows = runs.rows(), key_heads = 2, value_heads = 4, dim = 128;
  const int64_t channels = 2 * key_heads * dim + value_heads * dim, kernel = 4;
  const int64_t v_width = value_heads * dim;
  const cudaStream_t stream = rig().stream;

  // Causal conv + SiLU with a history: the model's width 4 (register strips) and width 3 (the
  // general kernel), against a float64 evaluation run by run, and with the q/k heads' L2 norms. The inputs' rows are wider than
  // the channels (the model's are a slice of the fused input projection).
  const int64_t ld = channels + 7;
  const std::vector<float> u = random_values(size_t(rows * ld), -1, 1);
  auto du = to_device(u);
  std::vector<float> conv_together;  // width 4, for the run-by-run comparison below
  gpu::device_buffer<float> w4, h4;
  for (const int64_t width : {kernel, kernel - 1}) {
    const std::vector<float> w = random_values(size_t(channels * width), -0.5f, 0.5f),
                             history = random_values(size_t((width - 1) * channels), -1, 1);
    auto dw = to_device(w), dh = to_device(history);
    gpu::device_buffer<float> conv(size_t(rows * channels), stream);
    kernels::causal_conv_silu(du.get(), ld, runs, channels, dw.get(), width, dh.get(), conv.get(),
                              stream);
    const std::vector<float> ours = download(conv.get(), size_t(rows * channels), stream);
    double worst = 0;
    for (int r = 0; r < runs.count; ++r)
      for (int64_t t = runs.bounds[r]; t < runs.bounds[r + 1]; ++t)
        for (int64_t ch = 0; ch < channels; ++ch) {
          double sum = 0;
          for (int64_t j = 0; j < width; ++j) {
            const int64_t source = t - (width - 1) + j;  // before the run: from the history
            const double input = source >= runs.bounds[r]
                                     ? u[size_t(source * ld + ch)]
                                     : history[size_t((width - 1 - (runs.bounds[r] - source)) * channels + ch)];
            sum += w[size_t(ch * width + j)] * input;
          }
          const double expected = sum / (1.0 + std::exp(-sum));
          worst = std::max(worst, std::abs(ours[size_t(t * channels + ch)] - expected));
        }
    BOOST_TEST_MESSAGE("causal conv width " << width << ": max abs error " << worst);
    BOOST_TEST(worst <= 1e-5);

    // With the q/k heads L2-normalised (fused into the width-4 conv, a separate kernel for
    // width 3): against the float64 norm of our conv output (checked above), q also scaled.
    kernels::conv_qk_norm norm;
    norm.q_width = key_heads * dim;
    norm.head_dim = dim;
    norm.q_scale = 0.125f;
    gpu::device_buffer<float> normed(size_t(rows * channels), stream);
    kernels::causal_conv_silu(du.get(), ld, runs, channels, dw.get(), width, dh.get(), normed.get(),
                              stream, &norm);
    const std::vector<float> ours_normed = download(normed.get(), size_t(rows * channels), stream);
    double worst_normed = 0;
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t head = 0; head < 2 * key_heads; ++head) {
        const float* in = &ours[size_t(t * channels + head * dim)];
        double squares = 0;
        for (int64_t d = 0; d < dim; ++d) squares += double(in[d]) * in[d];
        const double factor = (head < key_heads ? 0.125 : 1.0) / std::sqrt(squares + 1e-6);
        for (int64_t d = 0; d < dim; ++d)
          worst_normed = std::max(worst_normed, std::abs(ours_normed[size_t(t * channels + head * dim + d)] - in[d] * factor));
      }
    const auto tail = [&](const std::vector<float>& v) {  // the v channels stay as they were
      std::vector<float> out;
      for (int64_t t = 0; t < rows; ++t)
        out.insert(out.end(), v.begin() + t * channels + 2 * key_heads * dim, v.begin() + (t + 1) * channels);
      return out;
    };
    BOOST_TEST_MESSAGE("  with q/k L2 norms: max abs error " << worst_normed);
    BOOST_TEST(worst_normed <= 1e-6);
    BOOST_TEST(tail(ours_normed) == tail(ours), boost::test_tools::per_element());
    if (width == kernel) conv_together = ours, w4 = std::move(dw), h4 = std::move(dh);
  }

  // The delta rule on normalised-size inputs: q, k ~ unit rows, beta in (0, 1), log decay < 0.
  std::vector<float> qkv = random_values(size_t(rows * channels), -0.09f, 0.09f);
  const std::vector<float> beta = random_values(size_t(rows * value_heads), 0.05f, 0.95f),
                           decay = random_values(size_t(rows * value_heads), -0.6f, -0.01f),
                           state = random_values(size_t(v_width * dim), -0.3f, 0.3f);
  auto dqkv = to_device(qkv), dbeta = to_device(beta), ddecay = to_device(decay),
       dstate = to_device(state);
  // The rule over `over` from state_in (run r's at r * stride; stride 0: the same for all): the
  // output, and with `keep` each run's outgoing state (at the same stride, or one state).
  const int64_t state_floats = v_width * dim;
  auto rule_with_states = [&](const float* qkv_rows, const float* beta_rows,
                              const float* decay_rows, const kernels::row_runs& over,
                              const float* state_in, int64_t stride, bool keep) {
    kernels::delta_rule_args rule;
    rule.qkv = qkv_rows;
    rule.ld = channels;
    rule.k_offset = key_heads * dim;
    rule.v_offset = 2 * key_heads * dim;
    rule.beta = beta_rows;
    rule.log_decay = decay_rows;
    rule.tokens = over.rows();
    rule.key_heads = key_heads;
    rule.value_heads = value_heads;
    rule.key_dim = dim;
    rule.value_dim = dim;
    rule.state_in = state_in;
    rule.state_stride = stride;
    rule.runs = over;
    gpu::device_buffer<float> out(size_t(over.rows() * v_width), stream);
    gpu::device_buffer<float> state_out(keep ? size_t(over.count * state_floats) : 0, stream);
    gpu::device_buffer<float> scratch(kernels::delta_rule_scratch_floats(over, value_heads, dim, dim),
                                      stream);
    rule.out = out.get();
    rule.state_out = keep ? state_out.get() : nullptr;
    rule.scratch = scratch.get();
    kernels::gated_delta_rule(rule, stream);
    return std::make_pair(
        download(out.get(), size_t(over.rows() * v_width), stream),
        keep ? download(state_out.get(), size_t(over.count * state_floats), stream)
             : std::vector<float>{});
  };
  auto rule_over = [&](const float* qkv_rows, const float* beta_rows, const float* decay_rows,
                       const kernels::row_runs& over) {
    return rule_with_states(qkv_rows, beta_rows, decay_rows, over, dstate.get(), 0, false).first;
  };
  const std::vector<float> rule_together = rule_over(dqkv.get(), dbeta.get(), ddecay.get(), runs);

  for (int r = 0; r < runs.count; ++r) {
    const int64_t first = runs.bounds[r], length = runs.length(r);
    BOOST_TEST_CONTEXT("run " << r << " (" << length << " rows)") {
      const kernels::row_runs one = kernels::single_run(length);
      gpu::device_buffer<float> alone(size_t(length * channels), stream);
      kernels::causal_conv_silu(du.get() + first * ld, ld, one, channels, w4.get(), kernel,
                                h4.get(), alone.get(), stream);
      BOOST_TEST(rows_of(conv_together, channels, first, length) ==
                     download(alone.get(), size_t(length * channels), stream),
                 boost::test_tools::per_element());
      const std::vector<float> expected =
          rule_over(dqkv.get() + first * channels, dbeta.get() + first * value_heads,
                    ddecay.get() + first * value_heads, one);
      BOOST_TEST(rows_of(rule_together, v_width, first, length) == expected,
                 boost::test_tools::per_element());
    }
  }
  // Each run from a conv history of its own (history stride), as packed requests resume their
  // own prefixes: equal to each run alone from its history, and each run's tail for the next
  // segment (its last kernel - 1 inputs, reaching back into its history) equal to the run's alone.
  const int64_t history_floats = (kernel - 1) * channels;
  const std::vector<float> histories = random_values(size_t(runs.count * history_floats), -1, 1);
  auto dhistories = to_device(histories);
  gpu::device_buffer<float> conv_own(size_t(rows * channels), stream);
  kernels::causal_conv_silu(du.get(), ld, runs, channels, w4.get(), kernel, dhistories.get(),
                            conv_own.get(), stream, nullptr, history_floats);
  gpu::device_buffer<float> tails(size_t(runs.count * history_floats), stream);
  kernels::conv_history_after(du.get(), ld, runs, channels, kernel, dhistories.get(),
                              history_floats, tails.get(), history_floats, stream);
  const std::vector<float> conv_own_rows = download(conv_own.get(), size_t(rows * channels), stream);
  const std::vector<float> tails_together =
      download(tails.get(), size_t(runs.count * history_floats), stream);
  for (int r = 0; r < runs.count; ++r) {
    const int64_t first = runs.bounds[r], length = runs.length(r);
    BOOST_TEST_CONTEXT("run " << r << " (" << length << " rows) with its own conv history") {
      const kernels::row_runs one = kernels::single_run(length);
      const float* own_history = dhistories.get() + r * history_floats;
      gpu::device_buffer<float> alone(size_t(length * channels), stream);
      kernels::causal_conv_silu(du.get() + first * ld, ld, one, channels, w4.get(), kernel,
                                own_history, alone.get(), stream);
      BOOST_TEST(rows_of(conv_own_rows, channels, first, length) ==
                     download(alone.get(), size_t(length * channels), stream),
                 boost::test_tools::per_element());
      gpu::device_buffer<float> tail(size_t(history_floats), stream);
      kernels::conv_history_after(du.get() + first * ld, ld, one, channels, kernel, own_history, 0,
                                  tail.get(), 0, stream);
      const std::vector<float> own_tail = rows_of(tails_together, history_floats, r, 1);
      BOOST_TEST(own_tail == download(tail.get(), size_t(history_floats), stream),
                 boost::test_tools::per_element());
      std::vector<float> expected_tail;
      for (int64_t j = 0; j < kernel - 1; ++j)
        for (int64_t ch = 0; ch < channels; ++ch) {
          const int64_t source = length - (kernel - 1) + j;  // negative: from the run's history
          expected_tail.push_back(
              source >= 0 ? u[size_t((first + source) * ld + ch)]
                          : histories[size_t(r * history_floats + (kernel - 1 + source) * channels + ch)]);
        }
      BOOST_TEST(own_tail == expected_tail, boost::test_tools::per_element());
    }
  }

  // Several runs cannot keep one state.
  BOOST_CHECK_THROW(rule_with_states(dqkv.get(), dbeta.get(), ddecay.get(), runs, dstate.get(), 0,
                                     true),
                    std::invalid_argument);

  // Each run from a state of its own and into one (state_stride: the packed pass of requests
  // resuming their own prefixes): outputs and outgoing states equal each run alone, bit for bit.
  const std::vector<float> states = random_values(size_t(runs.count * state_floats), -0.3f, 0.3f);
  auto dstates = to_device(states);
  const auto [outs_together, states_together] =
      rule_with_states(dqkv.get(), dbeta.get(), ddecay.get(), runs, dstates.get(), state_floats, true);
  for (int r = 0; r < runs.count; ++r) {
    const int64_t first = runs.bounds[r], length = runs.length(r);
    BOOST_TEST_CONTEXT("run " << r << " with its own state") {
      const auto [out_alone, state_alone] = rule_with_states(
          dqkv.get() + first * channels, dbeta.get() + first * value_heads,
          ddecay.get() + first * value_heads, kernels::single_run(length),
          dstates.get() + r * state_floats, 0, true);
      BOOST_TEST(rows_of(outs_together, v_width, first, length) == out_alone,
                 boost::test_tools::per_element());
      BOOST_TEST(rows_of(states_together, state_floats, r, 1) == state_alone,
                 boost::test_tools::per_element());
    }
  }
  // A stride that does not hold a whole state is refused.
  BOOST_CHECK_THROW(rule_with_states(dqkv.get(), dbeta.get(), ddecay.get(), runs, dstates.get(),
                                     state_floats - 2, true),
                    std::invalid_argument);
}
#endif

#ifdef CUA_S1_HAVE_CUDA
// The chunked delta rule against the token-by-token recurrence of spec/model.md 4.4 step 5 in
// float64 (decay, correction with the decayed state, update, read after the update), from a
// random incoming state, on model-like inputs: unit-norm k, q scaled by 128^-1/2, beta in (0, 1),
// log decays down to -2. Lengths at the chunk edges; the outgoing state is checked too. The
// tensor-core products carry about 16 significant bits (split bf16 operands): one bf16 pass
// would miss the bound by an order of magnitude.
BOOST_AUTO_TEST_CASE(delta_rule_matches_the_float64_recurrence, *utf::precondition(test::cuda_present)) {
  const int64_t key_heads = 2, value_heads = 4, dim = 128;
  const int64_t channels = 2 * key_heads * dim + value_heads * dim, v_width = value_heads * dim;
  const cudaStream_t stream = rig().stream;
  for (const int64_t rows : {int64_t(1), int64_t(63), int64_t(64), int64_t(65), int64_t(150)}) {
    BOOST_TEST_CONTEXT(rows << " rows") {
      std::vector<float> qkv = random_values(size_t(rows * channels), -1, 1);
      for (int64_t t = 0; t < rows; ++t)  // q and k heads to unit norm, q then times 128^-1/2
        for (int64_t head = 0; head < 2 * key_heads; ++head) {
          float* x = &qkv[size_t(t * channels + head * dim)];
          double norm = 0;
          for (int64_t d = 0; d < dim; ++d) norm += double(x[d]) * x[d];
          const double scale = (head < key_heads ? 1.0 / std::sqrt(double(dim)) : 1.0) / std::sqrt(norm);
          for (int64_t d = 0; d < dim; ++d) x[d] = float(x[d] * scale);
        }
      const std::vector<float> beta = random_values(size_t(rows * value_heads), 0.02f, 0.98f),
                               decay = random_values(size_t(rows * value_heads), -2.0f, -0.001f),
                               state = random_values(size_t(v_width * dim), -0.5f, 0.5f);
      auto dqkv = to_device(qkv), dbeta = to_device(beta), ddecay = to_device(decay),
           dstate = to_device(state);
      gpu::device_buffer<float> out(size_t(rows * v_width), stream), state_out(state.size(), stream);
      gpu::device_buffer<float> scratch(
          kernels::delta_rule_scratch_floats(kernels::single_run(rows), value_heads, dim, dim), stream);
      kernels::delta_rule_args rule;
      rule.qkv = dqkv.get();
      rule.ld = channels;
      rule.k_offset = key_heads * dim;
      rule.v_offset = 2 * key_heads * dim;
      rule.beta = dbeta.get();
      rule.log_decay = ddecay.get();
      rule.tokens = rows;
      rule.key_heads = key_heads;
      rule.value_heads = value_heads;
      rule.key_dim = dim;
      rule.value_dim = dim;
      rule.out = out.get();
      rule.state_in = dstate.get();
      rule.state_out = state_out.get();
      rule.scratch = scratch.get();
      kernels::gated_delta_rule(rule, stream);
      const std::vector<float> ours = download(out.get(), size_t(rows * v_width), stream);
      const std::vector<float> ours_state = download(state_out.get(), state.size(), stream);

      double out_error = 0, out_scale = 0, state_error = 0, state_scale = 0;
      for (int64_t h = 0; h < value_heads; ++h) {
        const int64_t kh = h / (value_heads / key_heads);
        std::vector<double> s(size_t(dim * dim));  // s[key * dim + column]
        for (int64_t col = 0; col < dim; ++col)
          for (int64_t key = 0; key < dim; ++key)
            s[size_t(key * dim + col)] = state[size_t((h * dim + col) * dim + key)];
        std::vector<double> u(static_cast<size_t>(dim));
        for (int64_t t = 0; t < rows; ++t) {
          const float* q = &qkv[size_t(t * channels + kh * dim)];
          const float* k = q + key_heads * dim;
          const float* v = &qkv[size_t(t * channels + 2 * key_heads * dim + h * dim)];
          const double e = std::exp(double(decay[size_t(t * value_heads + h)]));
          const double b = beta[size_t(t * value_heads + h)];
          for (double& x : s) x *= e;
          for (int64_t col = 0; col < dim; ++col) {
            double sk = 0;
            for (int64_t key = 0; key < dim; ++key) sk += s[size_t(key * dim + col)] * k[key];
            u[size_t(col)] = b * (v[col] - sk);
          }
          for (int64_t key = 0; key < dim; ++key)
            for (int64_t col = 0; col < dim; ++col) s[size_t(key * dim + col)] += k[key] * u[size_t(col)];
          for (int64_t col = 0; col < dim; ++col) {
            double o = 0;
            for (int64_t key = 0; key < dim; ++key) o += s[size_t(key * dim + col)] * q[key];
            out_error = std::max(out_error, std::abs(ours[size_t(t * v_width + h * dim + col)] - o));
            out_scale = std::max(out_scale, std::abs(o));
          }
        }
        for (int64_t col = 0; col < dim; ++col)
          for (int64_t key = 0; key < dim; ++key) {
            const double expected = s[size_t(key * dim + col)];
            state_error = std::max(state_error, std::abs(ours_state[size_t((h * dim + col) * dim + key)] - expected));
            state_scale = std::max(state_scale, std::abs(expected));
          }
      }
      BOOST_TEST_MESSAGE("delta rule, " << rows << " rows: max abs error " << out_error << " (max |o| "
                                        << out_scale << "), state " << state_error << " (max |S| "
                                        << state_scale << ")");
      BOOST_TEST(out_error <= 2e-4 * out_scale);
      BOOST_TEST(state_error <= 2e-4 * state_scale);
    }
  }
}
#endif

#ifdef CUA_S1_HAVE_CUDA
// LayerNorm and zero-centred RMSNorm against float64 over rows of the widths the model uses
// (vision 1024, language 2560), a short one, a strided one and widths that take the block loop
// (not a multiple of 4, wider than 4096): outputs within one bf16 rounding (fp32: 1e-5).
BOOST_AUTO_TEST_CASE(row_norms_match_float64, *utf::precondition(test::cuda_present)) {
  const cudaStream_t stream = rig().stream;
  for (const int64_t dim : {int64_t(1024), int64_t(2560), int64_t(8), int64_t(100), int64_t(102),
                            int64_t(4100)}) {
    BOOST_TEST_CONTEXT("width " << dim) {
      const int64_t rows = 37, ld = dim + 4;  // RMSNorm reads rows ld apart
      const std::vector<float> x = random_values(size_t(rows * ld), -3, 5),
                               w = random_values(size_t(dim), -1, 1),
                               b = random_values(size_t(dim), -1, 1);
      auto dx = to_device(x), dw = to_device(w), db = to_device(b);
      gpu::device_buffer<__nv_bfloat16> layer(size_t(rows * ld), stream), rms(size_t(rows * dim), stream);
      gpu::device_buffer<float> rms_wide(size_t(rows * dim), stream);
      kernels::layer_norm_to_bf16(dx.get(), rows, dim, dw.get(),
                                  db.get(), 1e-6f, layer.get(), stream);
      kernels::rms_norm_zero_centred(dx.get(), rows, dim, ld, dw.get(), 1e-6f, rms.get(), nullptr,
                                     stream);
      kernels::rms_norm_zero_centred(dx.get(), rows, dim, ld, dw.get(), 1e-6f, nullptr,
                                     rms_wide.get(), stream);
      const auto layer_out = download(layer.get(), size_t(rows * dim), stream);
      const auto rms_out = download(rms.get(), size_t(rows * dim), stream);
      const auto rms_wide_out = download(rms_wide.get(), size_t(rows * dim), stream);
      double layer_worst = 0, rms_worst = 0, wide_worst = 0;
      for (int64_t r = 0; r < rows; ++r) {
        // LayerNorm reads rows `dim` apart, RMSNorm `ld` apart.
        double mean = 0, var = 0, squares = 0;
        for (int64_t i = 0; i < dim; ++i) mean += x[size_t(r * dim + i)];
        mean /= double(dim);
        for (int64_t i = 0; i < dim; ++i) var += std::pow(x[size_t(r * dim + i)] - mean, 2);
        const double inv = 1.0 / std::sqrt(var / double(dim) + 1e-6);
        for (int64_t i = 0; i < dim; ++i) squares += std::pow(double(x[size_t(r * ld + i)]), 2);
        const double rms_inv = 1.0 / std::sqrt(squares / double(dim) + 1e-6);
        for (int64_t i = 0; i < dim; ++i) {
          const double expected = (x[size_t(r * dim + i)] - mean) * inv * w[size_t(i)] + b[size_t(i)];
          const double expected_rms = x[size_t(r * ld + i)] * rms_inv * (1.0 + w[size_t(i)]);
          const size_t o = size_t(r * dim + i);
          layer_worst = std::max(layer_worst, std::abs(__bfloat162float(layer_out[o]) - expected) /
                                                  std::max(std::abs(expected), 1e-3));
          rms_worst = std::max(rms_worst, std::abs(__bfloat162float(rms_out[o]) - expected_rms) /
                                              std::max(std::abs(expected_rms), 1e-3));
          wide_worst = std::max(wide_worst, std::abs(rms_wide_out[o] - expected_rms) /
                                                std::max(std::abs(expected_rms), 1e-3));
        }
      }
      BOOST_TEST_MESSAGE("width " << dim << ": relative error LayerNorm " << layer_worst
                                  << ", RMSNorm bf16 " << rms_worst << ", fp32 " << wide_worst);
      BOOST_TEST(layer_worst <= 1.0 / 256 + 1e-5);  // half a bf16 ulp is 2^-9 relative
      BOOST_TEST(rms_worst <= 1.0 / 256 + 1e-5);
      BOOST_TEST(wide_worst <= 1e-5);
    }
  }
}
#endif
