// JPEG decoding against Pillow 11.3.0 fixtures (exact RGB hashes), MPO/CMYK/truncation paths, fuzz.
#define BOOST_TEST_MODULE codec_jpeg
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>

#include "codec/image_decoder.hpp"
#include "codec/jpeg_decoder.hpp"
#include "codec/jpeg_header.hpp"
#include "codec_test_support.hpp"

using namespace cua_s1;
using namespace codec_test;

namespace {

bool is_jpeg_file(const fixture_case& c) { return c.file.ends_with(".jpg"); }

outcome<rgb_image> decode_fixture(const std::string& file, image_mime mime = image_mime::jpeg) {
  return decode_image(read_file(fixture_dir() + "/" + file), mime);
}

}  // namespace

BOOST_AUTO_TEST_CASE(jpeg_fixtures_match_pillow) {
  size_t checked = 0, exact = 0;
  for (const auto& c : load_manifest()) {
    if (!is_jpeg_file(c)) continue;
    BOOST_TEST_CONTEXT(c.name) {
      const auto bytes = read_file(fixture_dir() + "/" + c.file);
      const auto r = decode_image_data_url(data_url(c.mime, bytes));
      if (c.status == 200) {
        BOOST_TEST_REQUIRE(r.ok(), (r.ok() ? "" : r.error().detail));
        BOOST_TEST(r->width == c.width);
        BOOST_TEST(r->height == c.height);
        const bool same = sha256_hex(r->pixels) == c.sha256;
        BOOST_TEST(same);  // bit-identical to Pillow's libjpeg-turbo output
        exact += same;
      } else {
        BOOST_TEST_REQUIRE(!r.ok());
        BOOST_TEST(r.error().status == c.status);
        BOOST_TEST(r.error().detail == c.detail);
      }
      ++checked;
    }
  }
  BOOST_TEST_MESSAGE("jpeg fixtures: " << checked << " checked, " << exact << " exact decodes");
  BOOST_TEST(checked >= 40u);
}

BOOST_AUTO_TEST_CASE(jpeg_mpo_is_a_format_mismatch) {
  const auto two = read_file(fixture_dir() + "/mpo_two_pictures.jpg");
  const auto header = read_jpeg_header(two);
  BOOST_TEST_REQUIRE(header.has_value());
  BOOST_TEST(header->is_mpo);
  for (const char* f : {"jpeg_mp_index_two_be.jpg", "jpeg_mp_index_two_le.jpg"}) {
    BOOST_TEST_CONTEXT(f) {
      BOOST_TEST(read_jpeg_header(read_file(fixture_dir() + "/" + f))->is_mpo);
      auto r = decode_fixture(f);
      BOOST_TEST_REQUIRE(!r.ok());
      BOOST_TEST(r.error().detail == "image format does not match its MIME type");
    }
  }
  // NumberOfImages == 1 is a plain JPEG; an MP index with too few entries fails to open.
  BOOST_TEST(!read_jpeg_header(read_file(fixture_dir() + "/jpeg_mp_index_one_image.jpg"))->is_mpo);
  BOOST_TEST(decode_fixture("jpeg_mp_index_one_image.jpg").ok());
  BOOST_TEST(!read_jpeg_header(read_file(fixture_dir() + "/jpeg_mp_index_short_entries.jpg")));
}

BOOST_AUTO_TEST_CASE(jpeg_cmyk_is_refused_with_its_own_message) {
  auto r = decode_fixture("jpeg_cmyk.jpg");
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().status == 422);
  BOOST_TEST(r.error().detail == "CMYK JPEG images are not supported");
  // The format check still comes first.
  auto as_png = decode_fixture("jpeg_cmyk.jpg", image_mime::png);
  BOOST_TEST(as_png.error().detail == "image format does not match its MIME type");
}

BOOST_AUTO_TEST_CASE(jpeg_truncation_rules) {
  const auto good = read_file(fixture_dir() + "/jpeg_420.jpg");
  BOOST_TEST(jpeg_data_complete(good));
  // Missing EOI right after the entropy data: Pillow's suspending source reports truncation.
  BOOST_TEST(!jpeg_data_complete(std::span(good).first(good.size() - 2)));
  BOOST_TEST(!jpeg_data_complete(std::span(good).first(good.size() / 2)));
  const auto prog = read_file(fixture_dir() + "/jpeg_420_progressive.jpg");
  BOOST_TEST(jpeg_data_complete(prog));
  BOOST_TEST(!jpeg_data_complete(std::span(prog).first(prog.size() - 2)));
  for (const char* f : {"jpeg_trunc_half.jpg", "jpeg_trunc_no_eoi.jpg", "jpeg_progressive_trunc.jpg",
                        "jpeg_soi_only.jpg", "jpeg_12bit_sof.jpg"}) {
    BOOST_TEST_CONTEXT(f) {
      auto r = decode_fixture(f);
      BOOST_TEST_REQUIRE(!r.ok());
      BOOST_TEST(r.error().detail == "invalid image data");
    }
  }
  // Corrupt entropy data only raises libjpeg warnings, which Pillow ignores.
  BOOST_TEST(decode_fixture("jpeg_corrupt_entropy.jpg").ok());
}

BOOST_AUTO_TEST_CASE(jpeg_limits_from_the_header) {
  auto aspect = decode_fixture("jpeg_limit_201x1.jpg");
  BOOST_TEST(aspect.error().detail == "image aspect ratio must not exceed 200:1");
  auto side = decode_fixture("jpeg_limit_2049x11.jpg");
  BOOST_TEST(side.error().detail ==
             "image must be single-frame, at most 2048 per side and 1048576 pixels");
  auto bomb = decode_fixture("jpeg_bomb_header.jpg");
  BOOST_TEST(bomb.error().detail == "invalid image data");
}

// Flips and truncates bytes of the JPEG fixtures; only asserts 200-or-422 and no crash.
BOOST_AUTO_TEST_CASE(jpeg_mutation_fuzz) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& c : load_manifest()) {
    if (is_jpeg_file(c) && c.status == 200 && c.width * c.height <= 20000) {
      seeds.push_back(read_file(fixture_dir() + "/" + c.file));
    }
  }
  BOOST_TEST_REQUIRE(seeds.size() > 10u);
  std::mt19937 rng(777);
  const auto start = std::chrono::steady_clock::now();
  size_t ok = 0, rejected = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> data = seeds[rng() % seeds.size()];
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {
      data.resize(rng() % (data.size() + 1));
    } else {
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips && !data.empty(); ++f) {
        // Bias towards the header, where the parsers branch most.
        const size_t limit = (kind == 1 && data.size() > 700) ? 700 : data.size();
        data[rng() % limit] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      if (kind == 3 && !data.empty()) data.resize(data.size() - rng() % (data.size() / 4 + 1));
    }
    const auto r = decode_image(data, image_mime::jpeg);
    if (r.ok()) {
      ++ok;
      BOOST_TEST_REQUIRE(r->pixels.size() == size_t{r->width} * r->height * 3);
    } else {
      ++rejected;
      BOOST_TEST_REQUIRE(r.error().status == 422);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("jpeg fuzz: " << ok << " decoded, " << rejected << " rejected, " << seconds
                                   << " s");
  BOOST_TEST(ok > 0u);
  BOOST_TEST(rejected > 0u);
}

// Encoders write 6 (grayscale) or 10 (colour) progressive scans; a file of thousands of tiny
// scans takes seconds to decode. More than image_limits::max_jpeg_scans is refused before
// decoding (a deliberate divergence: Pillow decodes such files, slowly).
BOOST_AUTO_TEST_CASE(jpeg_scan_count_is_limited) {
  const auto colour = read_file(fixture_dir() + "/jpeg_420_progressive.jpg");
  BOOST_TEST(walk_jpeg_stream(colour).scans == 10u);
  BOOST_TEST(walk_jpeg_stream(read_file(fixture_dir() + "/jpeg_420.jpg")).scans == 1u);
  const auto gray = read_file(fixture_dir() + "/jpeg_gray_progressive.jpg");
  const uint32_t own = walk_jpeg_stream(gray).scans;
  BOOST_TEST(own == 6u);
  // Extra AC scans of the one component (Pillow 11.3.0 decodes every count below).
  const uint8_t scan[] = {0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x01, 0x3F, 0x00, 0x00, 0x01};
  auto with_scans = [&](uint32_t total) {
    std::vector<uint8_t> file(gray.begin(), gray.end() - 2);  // without the EOI
    for (uint32_t i = own; i < total; ++i) file.insert(file.end(), std::begin(scan), std::end(scan));
    file.insert(file.end(), {0xFF, 0xD9});
    return file;
  };
  const auto at_limit = with_scans(100), over = with_scans(101);
  BOOST_TEST(walk_jpeg_stream(over).scans == 101u);
  BOOST_TEST(walk_jpeg_stream(over).complete);
  BOOST_TEST(decode_image(at_limit, image_mime::jpeg).ok());
  const auto refused = decode_image(over, image_mime::jpeg);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().status == 422);
  BOOST_TEST(refused.error().detail == "invalid image data");
  // The limit is an option: raised, the same file decodes.
  BOOST_TEST(decode_image(over, image_mime::jpeg, image_limits{.max_jpeg_scans = 200}).ok());
  // Scans after a complete single-scan image count too.
  std::vector<uint8_t> baseline = read_file(fixture_dir() + "/jpeg_420.jpg");
  baseline.resize(baseline.size() - 2);
  for (int i = 0; i < 200; ++i) baseline.insert(baseline.end(), std::begin(scan), std::end(scan));
  BOOST_TEST(walk_jpeg_stream(baseline).scans == 201u);
  BOOST_TEST(walk_jpeg_stream(baseline).complete);
  BOOST_TEST(!decode_image(baseline, image_mime::jpeg).ok());
}
