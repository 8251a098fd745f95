// Image preprocessing against the reference: smart_resize, bicubic resize and pixel_values hashes.
#define BOOST_TEST_MODULE prep_resize
#include <openssl/evp.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "prep/bicubic_resize.hpp"
#include "prep/pixel_values.hpp"
#include "prep/smart_resize.hpp"

namespace {

using cua_s1::processor_config;
using cua_s1::rgb_image;

const std::string fixture_path = std::string(CUA_S1_FIXTURES) + "/prep/reference.txt";

// ---- picture generators, identical to tools/make_prep_fixtures.py ----

// splitmix64 output number `index` of the stream that starts at `seed`.
uint64_t splitmix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint8_t top_byte(uint64_t seed, uint64_t index) {
  return static_cast<uint8_t>(splitmix(seed, index) >> 56);
}

rgb_image make_picture(const std::string& kind, uint64_t seed, uint32_t width, uint32_t height) {
  rgb_image image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  auto& px = image.pixels;
  if (kind == "noise") {
    for (size_t k = 0; k < px.size(); ++k) px[k] = top_byte(seed, k);
  } else if (kind == "binary") {
    for (size_t k = 0; k < px.size(); ++k) px[k] = (splitmix(seed, k) >> 63) ? 255 : 0;
  } else if (kind == "flat") {
    for (size_t k = 0; k < px.size(); ++k) px[k] = top_byte(seed, k % 3);
  } else if (kind == "gradient") {
    uint8_t p[9];
    for (int i = 0; i < 9; ++i) p[i] = top_byte(seed, i);
    for (uint32_t y = 0; y < height; ++y)
      for (uint32_t x = 0; x < width; ++x)
        for (int c = 0; c < 3; ++c)
          px[(static_cast<size_t>(y) * width + x) * 3 + c] = static_cast<uint8_t>(
              (p[3 * c] + x * (p[3 * c + 1] % 4) + y * (p[3 * c + 2] % 4)) % 256);
  } else if (kind == "edges") {
    uint8_t p[7];
    for (int i = 0; i < 7; ++i) p[i] = top_byte(seed, i);
    const uint32_t cell = 1 + p[0] % 24;
    for (uint32_t y = 0; y < height; ++y)
      for (uint32_t x = 0; x < width; ++x) {
        const uint8_t* colour = ((x / cell + y / cell) % 2) ? p + 4 : p + 1;
        std::memcpy(&px[(static_cast<size_t>(y) * width + x) * 3], colour, 3);
      }
  } else {
    BOOST_FAIL("unknown generator " << kind);
  }
  return image;
}

std::string sha256_hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  BOOST_REQUIRE(EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr) == 1);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// pixel_values as the reference serialises them: float32 little-endian (the host order here).
std::string sha256_floats(const std::vector<float>& values) {
  static_assert(sizeof(float) == 4);
  return sha256_hex(values.data(), values.size() * sizeof(float));
}

std::vector<std::vector<std::string>> fixture_rows(const std::string& tag) {
  std::ifstream in(fixture_path);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " << fixture_path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string f; fields >> f;) row.push_back(f);
    if (!row.empty() && row[0] == tag) rows.push_back(row);
  }
  return rows;
}

uint32_t u32(const std::string& s) { return static_cast<uint32_t>(std::stoul(s)); }
uint64_t u64(const std::string& s) { return std::stoull(s); }

}  // namespace

// ---- smart_resize ----

BOOST_AUTO_TEST_CASE(smart_resize_contract_table) {
  struct row {
    uint32_t w, h, rw, rh;
  };
  const row table[] = {
      {1, 1, 256, 256},       {17, 19, 256, 288},       {256, 256, 256, 256},
      {319, 241, 320, 256},   {272, 256, 256, 256},     {304, 256, 320, 256},
      {640, 320, 640, 320},   {319, 641, 320, 640},     {200, 1, 3648, 32},
      {7, 1400, 32, 3648},    {2048, 512, 2048, 512},   {1600, 600, 1600, 608},
      {640, 480, 640, 480},   {1280, 720, 1280, 704},   {1280, 800, 1280, 800},
      {1024, 768, 1024, 768}, {1920, 1080, 1920, 1088},
  };
  const processor_config config;
  for (const row& r : table) {
    const auto got = cua_s1::smart_resize(r.w, r.h, config);
    BOOST_TEST_CONTEXT(r.w << "x" << r.h) {
      BOOST_TEST(got.width == r.rw);
      BOOST_TEST(got.height == r.rh);
    }
  }
  // Ties go to the even multiple: 240 / 32 = 7.5 -> 8, 720 / 32 = 22.5 -> 22, 272 -> 8.5 -> 8.
  BOOST_TEST(cua_s1::smart_resize(240, 2000, config).width == 256u);
  BOOST_TEST(cua_s1::smart_resize(2000, 720, config).height == 704u);
  BOOST_TEST(cua_s1::smart_resize(272, 2000, config).width == 256u);
  // max_pixels branch: 5000 x 5000 -> beta = 5000 / 4096, floor(4096 / 32) * 32.
  BOOST_TEST(cua_s1::smart_resize(5000, 5000, config).width == 4096u);
  BOOST_TEST(cua_s1::aspect_ratio_supported(200, 1));
  BOOST_TEST(!cua_s1::aspect_ratio_supported(201, 1));
  BOOST_TEST(!cua_s1::aspect_ratio_supported(0, 5));
}

BOOST_AUTO_TEST_CASE(smart_resize_matches_python_table) {
  const processor_config config;
  const auto rows = fixture_rows("smart");
  BOOST_REQUIRE(rows.size() > 1000);
  size_t raising = 0, max_branch = 0;
  for (const auto& r : rows) {
    const uint32_t w = u32(r[1]), h = u32(r[2]), rw = u32(r[3]), rh = u32(r[4]);
    BOOST_TEST_CONTEXT(w << "x" << h) {
      const bool supported = cua_s1::aspect_ratio_supported(w, h);
      BOOST_TEST(supported == (rw != 0));
      if (!supported) {
        ++raising;
        continue;
      }
      const auto got = cua_s1::smart_resize(w, h, config);
      BOOST_TEST(got.width == rw);
      BOOST_TEST(got.height == rh);
      if (static_cast<uint64_t>(rw) * rh < static_cast<uint64_t>(w) * h / 2) ++max_branch;
    }
  }
  BOOST_TEST(raising > 0u);
  BOOST_TEST(max_branch > 0u);
}

// ---- resampling ----

BOOST_AUTO_TEST_CASE(resample_axis_shape) {
  // 720 -> 704: scale 1.0227, support 2.045, windows of up to 7 taps, weights summing to ~2^prec.
  const auto axis = cua_s1::make_resample_axis(720, 704);
  BOOST_TEST(axis.taps == 7u);
  BOOST_TEST(axis.first.size() == 704u);
  BOOST_TEST(axis.precision >= 14u);
  BOOST_TEST(axis.precision < 22u);
  for (size_t i = 0; i < 704; ++i) {
    int32_t sum = 0;
    for (uint32_t k = 0; k < axis.count[i]; ++k) sum += axis.coeffs[i * axis.taps + k];
    BOOST_TEST(std::abs(sum - (1 << axis.precision)) <= static_cast<int>(axis.taps));
    BOOST_TEST(axis.first[i] + axis.count[i] <= 720u);
  }
  // Upscaling keeps the 5-tap window of a plain cubic.
  BOOST_TEST(cua_s1::make_resample_axis(1, 256).taps == 5u);
}

BOOST_AUTO_TEST_CASE(flat_picture_stays_flat) {
  rgb_image flat = make_picture("flat", 7, 45, 33);
  const auto out = cua_s1::resize_bicubic_antialias(flat, 100, 17);
  BOOST_REQUIRE(out.pixels.size() == 100u * 17 * 3);
  for (size_t k = 0; k < out.pixels.size(); ++k) BOOST_TEST(out.pixels[k] == flat.pixels[k % 3]);
}

BOOST_AUTO_TEST_CASE(resize_matches_torchvision) {
  const auto rows = fixture_rows("resize");
  BOOST_REQUIRE(rows.size() >= 40u);
  for (const auto& r : rows) {
    const uint32_t w = u32(r[3]), h = u32(r[4]), ow = u32(r[5]), oh = u32(r[6]);
    const rgb_image src = make_picture(r[1], u64(r[2]), w, h);
    const rgb_image out = cua_s1::resize_bicubic_antialias(src, ow, oh);
    BOOST_TEST_CONTEXT(r[1] << " " << w << "x" << h << " -> " << ow << "x" << oh) {
      BOOST_TEST(sha256_hex(out.pixels.data(), out.pixels.size()) == r[7]);
    }
  }
}

// ---- pixel_values ----

BOOST_AUTO_TEST_CASE(normalization_is_the_fused_division) {
  rgb_image image;
  image.width = image.height = 32;
  image.pixels.assign(32 * 32 * 3, 0);
  const uint8_t probe[] = {0, 1, 127, 128, 200, 255};
  for (size_t i = 0; i < sizeof probe; ++i) image.pixels[i * 3] = probe[i];  // row 0, red
  const auto values = cua_s1::make_pixel_values(image, processor_config{});
  // Bit patterns from numpy: (np.float32(v) - np.float32(127.5)) / np.float32(127.5).
  const uint32_t expected[] = {0xbf800000u, 0xbf7dfdfeu, 0xbb808081u,
                               0x3b808081u, 0x3f119192u, 0x3f800000u};
  for (size_t i = 0; i < sizeof probe; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);  // patch 0, channel 0, frame 0, row 0, column i
    BOOST_TEST_CONTEXT("byte " << int(probe[i])) { BOOST_TEST(bits == expected[i]); }
  }
}

BOOST_AUTO_TEST_CASE(patch_order_on_hand_made_picture) {
  // A 4-pixel patch, 2x2 merge, 2 frames on an 8 x 4 picture: grid 2 x 4 patches, 8 patch rows of
  // 3 * 2 * 2 * 2 = 24 floats. Pixel (x, y, c) holds 100 + 10 * y + x + 64 * c (all distinct),
  // and the mean/std make value == byte.
  processor_config config;
  config.patch_size = 2;
  config.image_mean = {0.0f, 0.0f, 0.0f};
  config.image_std = {1.0f / 255.0f, 1.0f / 255.0f, 1.0f / 255.0f};
  rgb_image image;
  image.width = 8;
  image.height = 4;
  for (uint32_t y = 0; y < 4; ++y)
    for (uint32_t x = 0; x < 8; ++x)
      for (uint32_t c = 0; c < 3; ++c) image.pixels.push_back(uint8_t(10 + 10 * y + x + 64 * c));
  const auto grid = cua_s1::image_grid_thw(8, 4, config);
  BOOST_TEST(grid.t == 1u);
  BOOST_TEST(grid.h == 2u);
  BOOST_TEST(grid.w == 4u);
  const auto v = cua_s1::make_pixel_values(image, config);
  BOOST_REQUIRE(v.size() == 8u * 24);
  auto at = [&](int patch, int c, int t, int py, int px) {
    return v[patch * 24 + c * 8 + t * 4 + py * 2 + px];
  };
  // Patch 0 is the top-left patch (x 0..1, y 0..1).
  BOOST_TEST(at(0, 0, 0, 0, 0) == 10.0f);
  BOOST_TEST(at(0, 0, 0, 1, 1) == 21.0f);
  // Patch 1 is its right neighbour inside the same 2x2 merge block (x 2..3).
  BOOST_TEST(at(1, 0, 0, 0, 0) == 12.0f);
  // Patch 2 is the block's lower-left patch (y 2..3), not the next patch of row 0.
  BOOST_TEST(at(2, 0, 0, 0, 0) == 30.0f);
  BOOST_TEST(at(3, 0, 0, 1, 0) == 42.0f);
  // Patch 4 starts the second merge block (x 4..5, y 0..1).
  BOOST_TEST(at(4, 0, 0, 0, 0) == 14.0f);
  BOOST_TEST(at(7, 0, 0, 1, 1) == 10.0f + 30 + 7);
  // Channel-major inside a row, and the frame is repeated.
  BOOST_TEST(at(5, 2, 0, 0, 1) == 10.0f + 7 + 128);
  for (int patch = 0; patch < 8; ++patch)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k)
        BOOST_TEST(at(patch, c, 1, k / 2, k % 2) == at(patch, c, 0, k / 2, k % 2));
}

BOOST_AUTO_TEST_CASE(pixel_values_match_reference) {
  const processor_config config;
  const auto rows = fixture_rows("case");
  BOOST_REQUIRE_GE(rows.size(), 318u);  // 18 named + >= 300 randomized
  const auto start = std::chrono::steady_clock::now();
  size_t matched = 0;
  for (const auto& r : rows) {
    const uint32_t w = u32(r[3]), h = u32(r[4]);
    const rgb_image src = make_picture(r[1], u64(r[2]), w, h);
    BOOST_TEST_CONTEXT(r[1] << " " << w << "x" << h) {
      const auto prepared = cua_s1::preprocess_image(src, config);
      BOOST_TEST(prepared.resized.width == u32(r[5]));
      BOOST_TEST(prepared.resized.height == u32(r[6]));
      BOOST_TEST(prepared.grid.t == u32(r[7]));
      BOOST_TEST(prepared.grid.h == u32(r[8]));
      BOOST_TEST(prepared.grid.w == u32(r[9]));
      const std::string digest = sha256_floats(prepared.pixel_values);
      BOOST_TEST(digest == r[10]);
      if (digest != r[10]) {
        const auto resized =
            cua_s1::resize_bicubic_antialias(src, prepared.resized.width, prepared.resized.height);
        BOOST_TEST(sha256_hex(resized.pixels.data(), resized.pixels.size()) == r[11]);
      } else {
        ++matched;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE(matched << "/" << rows.size() << " pixel_values hashes equal in " << seconds
                             << " s");
}

BOOST_AUTO_TEST_CASE(pixel_values_match_naive_indexing) {
  // Every float of a 64 x 96 noise picture against the index formula of contract 7.6, for the
  // vectorised 16-pixel path and the generic path (patch 8).
  for (uint32_t patch : {16u, 8u}) {
    processor_config config;
    config.patch_size = patch;
    const rgb_image image = make_picture("noise", 99, 64, 96);
    const auto v = cua_s1::make_pixel_values(image, config);
    const uint32_t gw = 64 / patch, gh = 96 / patch, dim = 3 * 2 * patch * patch;
    BOOST_REQUIRE(v.size() == size_t{gw} * gh * dim);
    size_t bad = 0;
    for (uint32_t row = 0; row < gh; ++row)
      for (uint32_t col = 0; col < gw; ++col) {
        const uint32_t n = (((row / 2) * (gw / 2) + col / 2) * 2 + row % 2) * 2 + col % 2;
        for (uint32_t c = 0; c < 3; ++c)
          for (uint32_t t = 0; t < 2; ++t)
            for (uint32_t py = 0; py < patch; ++py)
              for (uint32_t px = 0; px < patch; ++px) {
                const uint8_t byte =
                    image.pixels[((row * patch + py) * 64 + col * patch + px) * 3 + c];
                const float want = (static_cast<float>(byte) - 127.5f) / 127.5f;
                const float got = v[size_t{n} * dim + ((c * 2 + t) * patch + py) * patch + px];
                bad += std::memcmp(&want, &got, 4) != 0;
              }
      }
    BOOST_TEST_CONTEXT("patch " << patch) { BOOST_TEST(bad == 0u); }
  }
}

// With the pixel values left to the backend, preprocessing keeps the resized picture (the same
// bytes the host path normalizes) and the normalization constants, and makes no pixel values.
BOOST_AUTO_TEST_CASE(pixel_values_left_to_the_backend_keep_the_decoded_picture) {
  processor_config config;
  config.image_mean = {0.25f, 0.5f, 0.75f};
  rgb_image src{300, 200, cua_s1::picture_bytes(300 * 200 * 3)};
  for (size_t i = 0; i < src.pixels.size(); ++i) src.pixels[i] = uint8_t((i * 7919) % 251);
  const auto host = cua_s1::preprocess_image(src, config);
  const auto left = cua_s1::preprocess_image(src, config, cua_s1::pixel_values_on::backend);
  BOOST_TEST(left.pixel_values.empty());
  BOOST_TEST(left.grid.h == host.grid.h);
  BOOST_TEST(left.grid.w == host.grid.w);
  BOOST_TEST(left.resized.width == host.resized.width);
  BOOST_TEST(left.resized.height == host.resized.height);
  BOOST_TEST(left.picture.width == 300u);  // not resized: the backend does that
  BOOST_TEST(left.picture.height == 200u);
  BOOST_TEST(left.picture.pixels == src.pixels, boost::test_tools::per_element());
  const rgb_image resized =
      cua_s1::resize_bicubic_antialias(left.picture, left.resized.width, left.resized.height);
  BOOST_TEST(cua_s1::make_pixel_values(resized, config) == host.pixel_values,
             boost::test_tools::per_element());
  // The moving form takes the pixels without a copy.
  rgb_image moved = src;
  const auto taken = cua_s1::picture_for_backend(std::move(moved), config);
  BOOST_TEST(taken.picture.pixels == src.pixels, boost::test_tools::per_element());
  BOOST_TEST(taken.grid.w == host.grid.w);
  BOOST_TEST(left.normalization.mean[0] == 0.25f * 255.0f);
  BOOST_TEST(left.normalization.mean[2] == 0.75f * 255.0f);
  BOOST_TEST(left.normalization.std[1] == 0.5f * 255.0f);
  BOOST_TEST(left.normalization.patch_size == 16u);
  BOOST_TEST(left.normalization.merge_size == 2u);
  BOOST_TEST(left.normalization.temporal_patch_size == 2u);
}
