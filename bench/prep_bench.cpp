// Single-thread timing of image preprocessing (resize + normalize + patchify) on screenshot sizes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "prep/bicubic_resize.hpp"
#include "prep/pixel_values.hpp"
#include "prep/smart_resize.hpp"

namespace {

// A screenshot-like picture: flat panels, text-like edges and a little noise.
cua_s1::rgb_image make_screenshot(uint32_t width, uint32_t height) {
  cua_s1::rgb_image image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const bool text = ((x / 7 + y / 11) % 5 == 0) && ((x ^ y) & 2);
      const uint8_t base = (y < height / 12) ? 40 : 235;
      for (int c = 0; c < 3; ++c) {
        uint8_t v = text ? uint8_t(20 + 30 * c) : uint8_t(base - 10 * c);
        if ((state >> 60) == 0) v = uint8_t(state >> 32);
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] = v;
      }
    }
  }
  return image;
}

template <class F>
double median_ms(int iterations, F&& body) {
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
  const cua_s1::processor_config config;
  const uint32_t sizes[][2] = {{1280, 720}, {1920, 1080}, {640, 480}, {1366, 768}};
  std::printf("%-10s %-10s %10s %10s %10s %10s %10s\n", "input", "resized", "resize_ms", "patch_ms",
              "into_ms", "total_ms", "patches");
  for (const auto& s : sizes) {
    const auto image = make_screenshot(s[0], s[1]);
    const auto target = cua_s1::smart_resize(s[0], s[1], config);
    cua_s1::rgb_image resized;
    const double resize_ms = median_ms(iterations, [&] {
      resized = cua_s1::resize_bicubic_antialias(image, target.width, target.height);
    });
    size_t sink = 0;
    const double patch_ms =
        median_ms(iterations, [&] { sink += cua_s1::make_pixel_values(resized, config).size(); });
    std::vector<float> reused(sink / iterations);
    const double into_ms =
        median_ms(iterations, [&] { cua_s1::write_pixel_values(resized, config, reused.data()); });
    size_t patches = 0;
    const double total_ms = median_ms(iterations, [&] {
      const auto prepared = cua_s1::preprocess_image(image, config);
      patches = prepared.pixel_values.size() / cua_s1::patch_dim(config);
    });
    char in[32], out[32];
    std::snprintf(in, sizeof in, "%ux%u", s[0], s[1]);
    std::snprintf(out, sizeof out, "%ux%u", target.width, target.height);
    std::printf("%-10s %-10s %10.2f %10.2f %10.2f %10.2f %10zu\n", in, out, resize_ms, patch_ms,
                into_ms, total_ms, patches);
    if (sink == 0) return 1;
  }
  return 0;
}
