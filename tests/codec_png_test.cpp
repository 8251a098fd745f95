// PNG decoding against Pillow 11.3.0 fixtures, the PNG rejection paths, and a mutation fuzz loop.
#define BOOST_TEST_MODULE codec_png
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <libdeflate.h>
#include <zlib.h>

#include "codec/crc32.hpp"
#include "codec/helper_threads.hpp"
#include "codec/image_decoder.hpp"
#include "codec/picture_memory.hpp"
#include "codec/png_decoder_testing.hpp"
#include "codec/png_header.hpp"
#include "codec/png_unfilter.hpp"
#include "codec_test_support.hpp"

using namespace cua_s1;
using namespace codec_test;

namespace {

// Runs one manifest case through the data URL entry point and checks status, detail, size, hash.
void check_case(const fixture_case& c) {
  BOOST_TEST_CONTEXT(c.name) {
    const auto bytes = read_file(fixture_dir() + "/" + c.file);
    const auto result = decode_image_data_url(data_url(c.mime, bytes));
    if (c.note == "divergence") {
      // Documented: Pillow keeps the rows after an early, clean zlib end black; we refuse.
      BOOST_TEST(!result.ok());
      return;
    }
    if (c.status == 200) {
      BOOST_TEST_REQUIRE(result.ok(), (result.ok() ? "" : result.error().detail));
      BOOST_TEST(result->width == c.width);
      BOOST_TEST(result->height == c.height);
      BOOST_TEST(result->pixels.size() == size_t{c.width} * c.height * 3);
      BOOST_TEST(sha256_hex(result->pixels) == c.sha256);
    } else {
      BOOST_TEST_REQUIRE(!result.ok());
      BOOST_TEST(result.error().status == c.status);
      BOOST_TEST(result.error().detail == c.detail);
    }
    // The raw-bytes entry point agrees with the data URL one.
    const auto direct = decode_image(bytes, c.mime == "png" ? image_mime::png : image_mime::jpeg);
    BOOST_TEST(direct.ok() == result.ok());
  }
}

bool is_png_case(const fixture_case& c) {
  return c.file.ends_with(".png") || c.name.starts_with("apng") || c.mime == "png";
}

}  // namespace

BOOST_AUTO_TEST_CASE(png_fixtures_match_pillow) {
  const auto cases = load_manifest();
  size_t checked = 0;
  for (const auto& c : cases) {
    if (!is_png_case(c) || c.file.ends_with(".jpg")) continue;
    check_case(c);
    ++checked;
  }
  BOOST_TEST(checked >= 100u);
}

BOOST_AUTO_TEST_CASE(png_contract_oracles) {
  // contract 7.1: L16 [100, 1000, 65535] -> 100, 255, 255; LA16 / RGBA16 keep the high byte.
  auto l16 = decode_image(read_file(fixture_dir() + "/png_l16_values.png"), image_mime::png);
  BOOST_TEST_REQUIRE(l16.ok());
  const std::vector<uint8_t> want = {100, 100, 100, 255, 255, 255, 255, 255, 255,
                                     255, 255, 255, 255, 255, 255, 0,   0,   0};
  BOOST_TEST(l16->pixels == want, boost::test_tools::per_element());
  auto la16 = decode_image(read_file(fixture_dir() + "/png_la16_oracle.png"), image_mime::png);
  BOOST_TEST_REQUIRE(la16.ok());
  BOOST_TEST(la16->pixels == (std::vector<uint8_t>{3, 3, 3}), boost::test_tools::per_element());
  auto rgba16 = decode_image(read_file(fixture_dir() + "/png_rgba16_oracle.png"), image_mime::png);
  BOOST_TEST_REQUIRE(rgba16.ok());
  BOOST_TEST(rgba16->pixels == (std::vector<uint8_t>{3, 0, 128}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_palette_beyond_plte_is_black) {
  auto im = decode_image(read_file(fixture_dir() + "/png_pal_out_of_range.png"), image_mime::png);
  BOOST_TEST_REQUIRE(im.ok());
  // PLTE has 4 entries (10..21); index 4 and above are (0, 0, 0).
  BOOST_TEST(im->pixels[0] == 10);
  BOOST_TEST(im->pixels[3 * 3 + 2] == 21);
  for (size_t i = 4 * 3; i < 16 * 3; ++i) BOOST_TEST(im->pixels[i] == 0);
}

BOOST_AUTO_TEST_CASE(png_rejection_messages) {
  const auto check = [](const char* file, image_mime mime, const char* detail) {
    BOOST_TEST_CONTEXT(file) {
      auto r = decode_image(read_file(fixture_dir() + "/" + file), mime);
      BOOST_TEST_REQUIRE(!r.ok());
      BOOST_TEST(r.error().status == 422);
      BOOST_TEST(r.error().detail == detail);
    }
  };
  check("png_as_jpeg.png", image_mime::jpeg, "image format does not match its MIME type");
  check("gif_as_png.gif", image_mime::png, "image format does not match its MIME type");
  check("png_limit_201x1.png", image_mime::png, "image aspect ratio must not exceed 200:1");
  check("png_limit_2049x11.png", image_mime::png,
        "image must be single-frame, at most 2048 per side and 1048576 pixels");
  check("png_limit_1024x1025.png", image_mime::png,
        "image must be single-frame, at most 2048 per side and 1048576 pixels");
  check("apng_two_frames.png", image_mime::png,
        "image must be single-frame, at most 2048 per side and 1048576 pixels");
  check("png_crc_ihdr.png", image_mime::png, "invalid image data");
  check("png_trunc_mid_idat.png", image_mime::png, "invalid image data");
  check("png_bad_adler.png", image_mime::png, "invalid image data");
  check("random_bytes.bin", image_mime::png, "invalid image data");
}

BOOST_AUTO_TEST_CASE(png_header_reports_frames_and_size) {
  const auto two = read_file(fixture_dir() + "/apng_two_frames.png");
  const auto header = read_png_header(two);
  BOOST_TEST_REQUIRE(header.has_value());
  BOOST_TEST(header->frames == 2u);
  BOOST_TEST(header->state.width == 9u);
  const auto one = read_file(fixture_dir() + "/apng_zero_frames.png");
  BOOST_TEST(read_png_header(one)->frames == 1u);  // acTL with 0 frames is ignored
}

namespace {

// A PNG of random samples whose rows use the given filter bytes (the data is not really
// filtered: any bytes are valid filtered data), compressed by libdeflate. Samples below
// `levels`: few levels make neighbours equal and the Paeth rule's ties frequent.
std::vector<uint8_t> make_filtered_png(uint32_t width, uint32_t height, uint8_t color_type,
                                       uint8_t bit_depth, const std::vector<uint8_t>& filters,
                                       std::mt19937& rng, unsigned levels = 256) {
  const int channels[7] = {1, 0, 3, 1, 2, 0, 4};
  const size_t row_bytes = (size_t{width} * channels[color_type] * bit_depth + 7) / 8;
  std::vector<uint8_t> rows;
  for (uint32_t y = 0; y < height; ++y) {
    rows.push_back(filters[y % filters.size()]);
    for (size_t i = 0; i < row_bytes; ++i) rows.push_back(static_cast<uint8_t>(rng() % levels));
  }
  libdeflate_compressor* compressor = libdeflate_alloc_compressor(6);
  std::vector<uint8_t> idat(libdeflate_zlib_compress_bound(compressor, rows.size()));
  idat.resize(libdeflate_zlib_compress(compressor, rows.data(), rows.size(), idat.data(), idat.size()));
  libdeflate_free_compressor(compressor);
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
    for (int shift = 24; shift >= 0; shift -= 8) png.push_back(static_cast<uint8_t>(data.size() >> shift));
    const size_t start = png.size();
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), data.begin(), data.end());
    const uint32_t crc = crc32_update(0, png.data() + start, png.size() - start);
    for (int shift = 24; shift >= 0; shift -= 8) png.push_back(static_cast<uint8_t>(crc >> shift));
  };
  std::vector<uint8_t> ihdr;
  for (const uint32_t v : {width, height})
    for (int shift = 24; shift >= 0; shift -= 8) ihdr.push_back(static_cast<uint8_t>(v >> shift));
  ihdr.insert(ihdr.end(), {bit_depth, color_type, 0, 0, 0});
  chunk("IHDR", ihdr);
  chunk("IDAT", idat);
  chunk("IEND", {});
  return png;
}

}  // namespace

// The libdeflate path's own row unfiltering against libspng, for every filter type, pixel sizes
// of 1 to 8 bytes and sub-byte gray, odd widths.
BOOST_AUTO_TEST_CASE(png_fast_path_unfilters_like_libspng) {
  std::mt19937 rng(2026);
  struct format {
    uint8_t color_type, bit_depth;
  };
  size_t checked = 0;
  for (const format f : {format{0, 1}, format{0, 4}, format{0, 8}, format{4, 8}, format{2, 8},
                         format{6, 8}, format{0, 16}, format{2, 16}, format{6, 16}})
    for (const uint32_t width : {1u, 2u, 7u, 33u})
      for (const std::vector<uint8_t>& filters :
           {std::vector<uint8_t>{0}, {1}, {2}, {3}, {4}, {4, 1, 2, 3, 0, 4, 4}}) {
        const auto png = make_filtered_png(width, 7, f.color_type, f.bit_depth, filters, rng);
        const auto header = read_png_header(png);
        BOOST_TEST_REQUIRE(header.has_value());
        const auto fast = decode_png_pixels(png, *header, png_inflate::libdeflate_only);
        const auto reference = decode_png_pixels(png, *header, png_inflate::libspng_only);
        BOOST_TEST_CONTEXT("color type " << int(f.color_type) << ", depth " << int(f.bit_depth)
                                         << ", width " << width << ", filters " << filters.size()) {
          BOOST_TEST_REQUIRE(fast.ok());
          BOOST_TEST_REQUIRE(reference.ok());
          BOOST_TEST(fast->pixels == reference->pixels, boost::test_tools::per_element());
        }
        ++checked;
      }
  BOOST_TEST(checked == 9u * 4u * 6u);
}

namespace {

// The libdeflate + wavefront path decodes `png` to the same pixels as libspng.
void expect_fast_path_matches_libspng(const std::vector<uint8_t>& png) {
  const auto header = read_png_header(png);
  BOOST_TEST_REQUIRE(header.has_value());
  const auto fast = decode_png_pixels(png, *header, png_inflate::libdeflate_only);
  const auto reference = decode_png_pixels(png, *header, png_inflate::libspng_only);
  BOOST_TEST_REQUIRE(fast.ok());
  BOOST_TEST_REQUIRE(reference.ok());
  BOOST_TEST((fast->pixels == reference->pixels));
}

}  // namespace

// Images large enough for the wavefront of threads: the fast path against libspng, with every
// filter type mixed down the rows (Paeth and Average rows read the row above while it is still
// being finished).
BOOST_AUTO_TEST_CASE(png_fast_path_unfilters_large_images_like_libspng) {
  std::mt19937 rng(7);
  for (const auto& [color_type, bit_depth] : {std::pair<uint8_t, uint8_t>{2, 8}, {6, 16}, {0, 8}}) {
    BOOST_TEST_CONTEXT("color type " << int(color_type) << ", depth " << int(bit_depth)) {
      const auto png = make_filtered_png(1283, 301, color_type, bit_depth, {4, 4, 2, 3, 1, 4, 0, 2, 3, 3}, rng);
      expect_fast_path_matches_libspng(png);
    }
  }
}

// A picture memory source installed for the process (the CUDA backend's pinned blocks): large
// decoded pictures' bytes, and the inflated rows behind them, come from it, with the same pixels
// as from the heap; small ones stay on the heap; all it handed out comes back.
BOOST_AUTO_TEST_CASE(decoded_pictures_use_the_installed_picture_memory) {
  struct counting_memory final : picture_memory {
    std::atomic<int> handed_out{0}, outstanding{0};
    void* allocate(size_t bytes) override {
      ++handed_out;
      ++outstanding;
      return ::operator new(bytes, std::align_val_t(64));
    }
    void deallocate(void* pointer, size_t bytes) noexcept override {
      --outstanding;
      ::operator delete(pointer, bytes, std::align_val_t(64));
    }
  } source;
  std::mt19937 rng(11);
  for (const auto& [color_type, bit_depth] : {std::pair<uint8_t, uint8_t>{2, 8}, {6, 8}, {0, 16}}) {
    BOOST_TEST_CONTEXT("color type " << int(color_type) << ", depth " << int(bit_depth)) {
      const auto png = make_filtered_png(640, 200, color_type, bit_depth, {4, 2, 1, 3, 0}, rng);
      const auto header = read_png_header(png);
      BOOST_TEST_REQUIRE(header.has_value());
      const auto from_heap = decode_png_pixels(png, *header);
      BOOST_TEST_REQUIRE(from_heap.ok());
      BOOST_TEST(from_heap->pixels.get_allocator().source == nullptr);
      use_picture_memory(&source);
      const int before = source.handed_out;
      {
        const auto pooled = decode_png_pixels(png, *header);
        BOOST_TEST_REQUIRE(pooled.ok());
        BOOST_TEST(pooled->pixels.get_allocator().source == &source);
        BOOST_TEST(source.handed_out > before);
        BOOST_TEST((pooled->pixels == from_heap->pixels));
        const auto small = make_filtered_png(8, 8, color_type, bit_depth, {1, 4}, rng);
        const int with_large = source.handed_out;
        const auto small_picture = decode_png_pixels(small, *read_png_header(small));
        BOOST_TEST_REQUIRE(small_picture.ok());
        BOOST_TEST(source.handed_out == with_large);  // under min_picture_memory_bytes
      }
      use_picture_memory(nullptr);
      BOOST_TEST(source.outstanding == 0);
    }
  }
}

// Paeth rows taken several at a time (the SIMD rule for 3- and 4-byte pixels, RGB8, RGBA8 and
// LA16) in runs of every length and next to other filters, on widths that cut the rows into
// uneven spans, with data that makes the predictor's ties common: the same pixels as libspng.
BOOST_AUTO_TEST_CASE(png_paeth_runs_unfilter_like_libspng) {
  std::mt19937 rng(2027);
  size_t checked = 0;
  for (const auto& [color_type, bit_depth] : {std::pair<uint8_t, uint8_t>{2, 8}, {6, 8}, {4, 16}})
    for (const uint32_t width : {1u, 2u, 85u, 86u, 87u, 300u, 1283u})
      for (const std::vector<uint8_t>& filters :
           {std::vector<uint8_t>{4}, {4, 2}, {4, 4, 4, 2, 4, 1, 4, 4, 4, 4, 4, 0, 3, 4, 4}})
        for (const unsigned levels : {3u, 256u}) {
          BOOST_TEST_CONTEXT("color type " << int(color_type) << ", width " << width << ", filters "
                                           << filters.size() << ", levels " << levels) {
            const auto png = make_filtered_png(width, 61, color_type, bit_depth, filters, rng, levels);
            expect_fast_path_matches_libspng(png);
          }
          ++checked;
        }
  BOOST_TEST(checked == 3u * 7u * 3u * 2u);
}

// The wavefront gives the same bytes with 0, 1, 3 and 7 helper threads, and an unknown filter
// byte in any row (first, middle, last) fails the call without leaving a thread waiting.
BOOST_AUTO_TEST_CASE(png_unfilter_is_the_same_with_any_thread_count) {
  std::mt19937 rng(11);
  const size_t row_bytes = 3 * 1500, bpp = 3;
  const uint32_t rows = 97;
  std::vector<uint8_t> filtered(rows * (row_bytes + 1));
  for (uint32_t y = 0; y < rows; ++y) {
    filtered[y * (row_bytes + 1)] = static_cast<uint8_t>(rng() % 3 ? 4 : rng() % 5);  // Paeth runs
    for (size_t i = 1; i <= row_bytes; ++i)
      filtered[y * (row_bytes + 1) + i] = static_cast<uint8_t>(y % 2 ? rng() : rng() % 3);
  }
  std::vector<uint8_t> alone(rows * row_bytes);
  BOOST_TEST_REQUIRE(unfilter_png_rows(filtered.data(), row_bytes, rows, bpp, alone.data(), 0));
  for (const unsigned helpers : {1u, 3u, 7u}) {
    std::vector<uint8_t> together(rows * row_bytes);
    BOOST_TEST(unfilter_png_rows(filtered.data(), row_bytes, rows, bpp, together.data(), helpers));
    BOOST_TEST((together == alone), helpers << " helpers");
  }
  // Helpers woken ahead of the call (as the decoder does while inflating): used at once, or back
  // asleep after their spin; the same bytes either way, and nothing left waiting.
  for (const int pause_us : {0, 3000}) {
    wake_helpers_ahead(3, std::chrono::microseconds(1000));
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    std::vector<uint8_t> together(rows * row_bytes);
    BOOST_TEST(unfilter_png_rows(filtered.data(), row_bytes, rows, bpp, together.data(), 3));
    BOOST_TEST((together == alone), "woken ahead, then " << pause_us << " us idle");
  }
  for (const uint32_t bad_row : {0u, rows / 2, rows - 1}) {
    std::vector<uint8_t> broken = filtered, out(rows * row_bytes);
    broken[bad_row * (row_bytes + 1)] = 5;
    BOOST_TEST(!unfilter_png_rows(broken.data(), row_bytes, rows, bpp, out.data(), 3), "row " << bad_row);
  }
}

// Flips and truncates bytes of every PNG fixture: 200 or 422 and no crash, and the libdeflate
// fast path decodes exactly what libspng decodes.
BOOST_AUTO_TEST_CASE(png_mutation_fuzz) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& c : load_manifest()) {
    if (c.file.ends_with(".png") && c.status == 200 && c.width * c.height <= 4096) {
      seeds.push_back(read_file(fixture_dir() + "/" + c.file));
    }
  }
  BOOST_TEST_REQUIRE(seeds.size() > 20u);
  std::mt19937 rng(12345);
  const auto start = std::chrono::steady_clock::now();
  size_t ok = 0, rejected = 0, fast_decoded = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::vector<uint8_t> data = seeds[rng() % seeds.size()];
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {
      data.resize(rng() % (data.size() + 1));
    } else {
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips && !data.empty(); ++f) {
        data[rng() % data.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      if (kind == 3 && !data.empty()) data.resize(data.size() - rng() % (data.size() / 4 + 1));
    }
    const auto r = decode_image(data, image_mime::png);
    if (r.ok()) {
      ++ok;
      BOOST_TEST_REQUIRE(r->pixels.size() == size_t{r->width} * r->height * 3);
    } else {
      ++rejected;
      BOOST_TEST_REQUIRE(r.error().status == 422);
    }
    // The libdeflate path and libspng agree on every mutant they both get to decode.
    const auto header = read_png_header(data);
    if (header && uint64_t{header->state.width} * header->state.height <= (1u << 20)) {
      const auto automatic = decode_png_pixels(data, *header);
      const auto reference = decode_png_pixels(data, *header, png_inflate::libspng_only);
      BOOST_TEST_REQUIRE(automatic.ok() == reference.ok());
      if (automatic.ok()) BOOST_TEST_REQUIRE(automatic->pixels == reference->pixels);
      const auto fast = decode_png_pixels(data, *header, png_inflate::libdeflate_only);
      if (fast.ok()) {  // where the fast path decodes at all, it decodes what libspng does
        ++fast_decoded;
        BOOST_TEST_REQUIRE(reference.ok());
        BOOST_TEST_REQUIRE(fast->pixels == reference->pixels);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("png fuzz: " << ok << " decoded (" << fast_decoded << " by the libdeflate path), "
                                  << rejected << " rejected, " << seconds
                                  << " s");
  BOOST_TEST(ok > 0u);
  BOOST_TEST(rejected > 0u);
  BOOST_TEST(fast_decoded > 0u);
}

namespace {

// `base` with `chunks` (whole chunks: length, name, data, CRC) inserted before its first IDAT,
// or before IEND (`after_data`).
std::vector<uint8_t> with_chunks(std::vector<uint8_t> base, const std::vector<uint8_t>& chunks,
                                 bool after_data) {
  const char* name = after_data ? "IEND" : "IDAT";
  auto at = std::search(base.begin(), base.end(), name, name + 4) - 4;
  base.insert(at, chunks.begin(), chunks.end());
  return base;
}

std::vector<uint8_t> png_chunk(const char* name, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(4);
  const uint32_t n = static_cast<uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(n >> (24 - 8 * i));
  out.insert(out.end(), name, name + 4);
  out.insert(out.end(), data.begin(), data.end());
  const uint32_t crc = crc32_update(crc32_update(0, out.data() + 4, 4), data.data(), data.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(crc >> (24 - 8 * i)));
  return out;
}

// `head` followed by `size` bytes of 'a' compressed as a zlib stream.
std::vector<uint8_t> compressed_text(std::vector<uint8_t> head, size_t size) {
  std::vector<uint8_t> text(size, 'a');
  uLongf length = compressBound(text.size());
  std::vector<uint8_t> z(length);
  BOOST_TEST_REQUIRE(compress2(z.data(), &length, text.data(), text.size(), 9) == Z_OK);
  head.insert(head.end(), z.begin(), z.begin() + static_cast<std::ptrdiff_t>(length));
  return head;
}

}  // namespace

// Pillow inflates zTXt, iTXt and iCCP payloads to at most 1 MiB each (ValueError beyond, which
// fails Image.open or load) and at most 64 MiB of text in all; the verdicts below are Pillow
// 11.3.0's on the same files (checked once with it). A 200 MiB bomb costs us 1 MiB of inflate.
BOOST_AUTO_TEST_CASE(png_compressed_text_and_icc_chunks_inflate_as_far_as_pillow_allows) {
  const auto base = read_file(fixture_dir() + "/png_ct2_8.png");
  const size_t mib = 1 << 20;
  struct kind {
    const char* name;
    std::vector<uint8_t> head;  // up to the zlib stream
    bool also_after_data;
  };
  const kind kinds[] = {{"zTXt", {'k', 0, 0}, true},
                        {"iCCP", {'p', 0, 0}, true},
                        {"iTXt", {'k', 0, 1, 0, 0, 0}, false}};
  for (const auto& k : kinds) {
    for (const size_t size : {mib - 1, mib, mib + 1}) {
      for (const bool after : {false, true}) {
        if (after && !k.also_after_data) continue;
        BOOST_TEST_CONTEXT(k.name << " inflating to " << size << (after ? " after" : " before")
                                  << " the image data") {
          const auto file = with_chunks(base, png_chunk(k.name, compressed_text(k.head, size)), after);
          const auto r = decode_image(file, image_mime::png);
          if (size <= mib) {
            BOOST_TEST(r.ok());
          } else {
            BOOST_TEST_REQUIRE(!r.ok());
            BOOST_TEST(r.error().status == 422);
            BOOST_TEST(r.error().detail == "invalid image data");
          }
        }
      }
    }
  }
  // A 200 MiB zTXt bomb is refused after 1 MiB of output.
  const auto bomb = with_chunks(base, png_chunk("zTXt", compressed_text({'k', 0, 0}, 200 * mib)), false);
  BOOST_TEST(bomb.size() < 400'000u);
  BOOST_TEST(!decode_image(bomb, image_mime::png).ok());
  // A corrupt stream is ignored (zlib.error is caught)...
  auto corrupt = compressed_text({'k', 0, 0}, 1000);
  corrupt[10] ^= 0xFF;
  BOOST_TEST(decode_image(with_chunks(base, png_chunk("zTXt", corrupt), false), image_mime::png).ok());
  // ...unless the output passes 1 MiB before the corruption is reached.
  auto late = compressed_text({'k', 0, 0}, mib + 1);
  late.back() ^= 0xFF;  // the Adler-32
  BOOST_TEST(!decode_image(with_chunks(base, png_chunk("zTXt", late), false), image_mime::png).ok());
  // Text in all: 67 chunks of 1,000,000 characters pass, 68 (68,000,000 > 64 MiB) do not.
  const auto one = png_chunk("zTXt", compressed_text({'k', 0, 0}, 1'000'000));
  for (const int count : {67, 68}) {
    std::vector<uint8_t> chunks;
    for (int i = 0; i < count; ++i) chunks.insert(chunks.end(), one.begin(), one.end());
    BOOST_TEST_CONTEXT(count << " text chunks") {
      BOOST_TEST(decode_image(with_chunks(base, chunks, false), image_mime::png).ok() == (count == 67));
    }
  }
}
