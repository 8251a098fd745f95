// Content-Encoding gzip and zstd request bodies: decoded exactly, 413 one byte past the limit
// with memory bounded (1 GiB bombs), 400 for corrupt, truncated or trailing data and a zstd
// window over 8 MiB; the header values the server reads.
#define BOOST_TEST_MODULE codec_content_decoding
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <zlib.h>
#include <zstd.h>

#include <functional>
#include <string>

#include "codec/content_decoding.hpp"

using namespace cua_s1;

namespace {

constexpr size_t limit = 8 * 1024 * 1024;

// Feeds `chunks` chunks from `next_chunk` through a gzip deflate stream.
std::string gzip_stream(size_t chunks, const std::function<std::string(size_t)>& next_chunk) {
  z_stream z{};
  BOOST_REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out;
  char buffer[64 * 1024];
  for (size_t i = 0; i < chunks; ++i) {
    std::string chunk = next_chunk(i);
    const bool last = i + 1 == chunks;
    z.next_in = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_in = static_cast<uInt>(chunk.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0 || (last && z.avail_in > 0));
  }
  deflateEnd(&z);
  return out;
}

std::string gzip(const std::string& text) {
  return gzip_stream(1, [&](size_t) { return text; });
}

// The same through zstd, streaming (no content size in the frame header), with `window_log`.
std::string zstd_stream(size_t chunks, const std::function<std::string(size_t)>& next_chunk,
                        int window_log = 0) {
  ZSTD_CCtx* context = ZSTD_createCCtx();
  if (window_log) ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, window_log);
  std::string out;
  std::string buffer(ZSTD_CStreamOutSize(), '\0');
  for (size_t i = 0; i < chunks; ++i) {
    const std::string chunk = next_chunk(i);
    const auto mode = i + 1 == chunks ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
    size_t left = 0;
    do {
      ZSTD_outBuffer o{buffer.data(), buffer.size(), 0};
      left = ZSTD_compressStream2(context, &o, &in, mode);
      BOOST_REQUIRE(!ZSTD_isError(left));
      out.append(buffer.data(), o.pos);
    } while (mode == ZSTD_e_end ? left != 0 : in.pos != in.size);
  }
  ZSTD_freeCCtx(context);
  return out;
}

std::string zstd(const std::string& text) {
  return zstd_stream(1, [&](size_t) { return text; });
}

void expect_failure(const outcome<std::string>& decoded, int status) {
  BOOST_REQUIRE(!decoded.ok());
  BOOST_TEST(decoded.error().status == status);
  BOOST_TEST(!decoded.error().detail.empty());
}

long max_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

const std::string sample = R"({"model":"cua-s1-4b-0.2","state":{"image":"data:image/png;base64,AAAA"}})";

}  // namespace

BOOST_AUTO_TEST_CASE(header_values) {
  BOOST_TEST((parse_content_encoding("") == content_coding::identity));
  BOOST_TEST((parse_content_encoding(" Identity ") == content_coding::identity));
  BOOST_TEST((parse_content_encoding("GZIP") == content_coding::gzip));
  BOOST_TEST((parse_content_encoding("x-gzip") == content_coding::gzip));
  BOOST_TEST((parse_content_encoding("zstd") == content_coding::zstd));
  for (const char* refused : {"br", "deflate", "compress", "gzip, zstd", "zstd,identity", "*"})
    BOOST_TEST(!parse_content_encoding(refused).has_value(), refused);
}

BOOST_AUTO_TEST_CASE(decodes_exactly) {
  BOOST_TEST(*decode_content(sample, content_coding::identity, limit) == sample);
  BOOST_TEST(*decode_content(gzip(sample), content_coding::gzip, limit) == sample);
  BOOST_TEST(*decode_content(zstd(sample), content_coding::zstd, limit) == sample);
  BOOST_TEST(*decode_content(gzip(""), content_coding::gzip, limit) == "");
  BOOST_TEST(*decode_content(zstd(""), content_coding::zstd, limit) == "");
}

BOOST_AUTO_TEST_CASE(the_limit_is_on_the_decoded_size) {
  const std::string at_limit(1000, 'a');
  const std::string over = at_limit + "a";
  BOOST_TEST(decode_content(gzip(at_limit), content_coding::gzip, 1000)->size() == 1000u);
  BOOST_TEST(decode_content(zstd(at_limit), content_coding::zstd, 1000)->size() == 1000u);
  expect_failure(decode_content(gzip(over), content_coding::gzip, 1000), 413);
  expect_failure(decode_content(zstd(over), content_coding::zstd, 1000), 413);
  expect_failure(decode_content(over, content_coding::identity, 1000), 413);
}

BOOST_AUTO_TEST_CASE(bombs_of_one_gib_are_413_with_memory_bounded) {
  const std::string zeros(1024 * 1024, '\0');
  const auto mib_of_zeros = [&](size_t) { return zeros; };
  const std::string gzip_bomb = gzip_stream(1024, mib_of_zeros);
  const std::string zstd_bomb = zstd_stream(1024, mib_of_zeros);
  BOOST_TEST_REQUIRE(gzip_bomb.size() < 2u * 1024 * 1024);  // a body the server reads
  BOOST_TEST_REQUIRE(zstd_bomb.size() < 1024u * 1024);
  const long before = max_rss_kib();
  expect_failure(decode_content(gzip_bomb, content_coding::gzip, limit), 413);
  expect_failure(decode_content(zstd_bomb, content_coding::zstd, limit), 413);
  // Decoding either bomb whole would touch 1 GiB; a bounded decoder holds the limit plus a step.
  BOOST_TEST(max_rss_kib() - before < 64 * 1024);
}

BOOST_AUTO_TEST_CASE(corrupt_truncated_or_trailing_data_is_400) {
  const std::string g = gzip(sample);
  const std::string z = zstd(sample);
  for (const std::string& body : std::vector<std::string>{std::string("not gzip at all"), g.substr(0, g.size() - 4),
                                  g.substr(0, 12), g + "x", g + g, std::string()})
    expect_failure(decode_content(body, content_coding::gzip, limit), 400);
  std::string flipped = g;
  flipped[g.size() / 2] ^= 0x55;
  flipped[g.size() - 6] ^= 0x55;  // the CRC
  expect_failure(decode_content(flipped, content_coding::gzip, limit), 400);
  for (const std::string& body : std::vector<std::string>{std::string("not zstd at all"), z.substr(0, z.size() - 3),
                                  z.substr(0, 6), z + "x", z + z, std::string()})
    expect_failure(decode_content(body, content_coding::zstd, limit), 400);
}

BOOST_AUTO_TEST_CASE(a_zstd_window_over_8_mib_is_400) {
  const std::string small_window = zstd_stream(2, [](size_t) { return std::string(100, 'w'); }, 23);
  BOOST_TEST(decode_content(small_window, content_coding::zstd, limit)->size() == 200u);
  const std::string large_window = zstd_stream(2, [](size_t) { return std::string(100, 'w'); }, 24);
  expect_failure(decode_content(large_window, content_coding::zstd, limit), 400);
}
