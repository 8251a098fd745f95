// Data URL prefix, length limits and strict base64 (Python b64decode(validate=True) semantics).
#define BOOST_TEST_MODULE codec_data_url
#include <boost/test/unit_test.hpp>

#include <string>

#include "codec/data_url.hpp"
#include "codec/image_decoder.hpp"
#include "codec_test_support.hpp"

using namespace cua_s1;

namespace {

std::string detail_of(std::string_view url) {
  const auto r = parse_image_data_url(url);
  return r.ok() ? std::string("ok") : r.error().detail;
}

bool decodes(std::string_view text, std::vector<uint8_t>* out = nullptr) {
  std::vector<uint8_t> bytes;
  const bool ok = decode_base64_strict(text, bytes);
  if (out) *out = bytes;
  return ok;
}

}  // namespace

BOOST_AUTO_TEST_CASE(prefixes_are_exact) {
  BOOST_TEST(detail_of("data:image/png;base64,QUJD") == "ok");
  BOOST_TEST(detail_of("data:image/jpeg;base64,QUJD") == "ok");
  BOOST_CHECK(parse_image_data_url("data:image/jpeg;base64,QUJD")->mime == image_mime::jpeg);
  BOOST_CHECK(parse_image_data_url("data:image/png;base64,QUJD")->mime == image_mime::png);
  for (const char* bad : {"data:image/jpg;base64,QUJD", "data:image/PNG;base64,QUJD",
                          "DATA:image/png;base64,QUJD", "data:image/png;charset=x;base64,QUJD",
                          "data:image/png,QUJD", "data:image/gif;base64,QUJD",
                          "https://example.invalid/a.png", "", "data:image/png;base64"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_TEST(detail_of(bad) == "only inline PNG/JPEG images are supported");
    }
  }
}

BOOST_AUTO_TEST_CASE(base64_strictness) {
  std::vector<uint8_t> out;
  BOOST_TEST(decodes("", &out));
  BOOST_TEST(out.empty());
  BOOST_TEST(decodes("QQ==", &out));
  BOOST_TEST(out == (std::vector<uint8_t>{'A'}), boost::test_tools::per_element());
  BOOST_TEST(decodes("QUI=", &out));
  BOOST_TEST(out == (std::vector<uint8_t>{'A', 'B'}), boost::test_tools::per_element());
  BOOST_TEST(decodes("QUJD", &out));
  BOOST_TEST(out == (std::vector<uint8_t>{'A', 'B', 'C'}), boost::test_tools::per_element());
  // Non-canonical trailing bits are accepted, as Python does.
  BOOST_TEST(decodes("QR==", &out));
  BOOST_TEST(out == (std::vector<uint8_t>{'A'}), boost::test_tools::per_element());
  BOOST_TEST(decodes("QUJ=", &out));
  BOOST_TEST(decodes("+/+/", &out));
  BOOST_TEST(out == (std::vector<uint8_t>{0xFB, 0xFF, 0xBF}), boost::test_tools::per_element());
  for (const char* bad : {"QQ=", "QQ", "Q===", "====", "=QUJ", "QQ=A", "QUJDQQ==QUJD", "QQ==QQ==",
                          "QU JD", "QUJD\n", " QUJD", "QU-D", "QU_D", "QUJ=QUJD", "QUJD=",
                          "QUJ\x80", "QU\0D"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!decodes(bad)); }
  }
  BOOST_TEST(!decodes(std::string_view("QU\0D", 4)));
  BOOST_TEST(detail_of("data:image/png;base64,QU JD") == "invalid image data");
  BOOST_TEST(detail_of("data:image/png;base64,QQ=") == "invalid image data");
}

BOOST_AUTO_TEST_CASE(base64_matches_a_reference_encoder_on_random_data) {
  uint32_t state = 1;
  for (size_t n = 0; n < 300; ++n) {
    std::vector<uint8_t> data(n);
    for (auto& b : data) b = static_cast<uint8_t>((state = state * 1103515245u + 12345u) >> 16);
    std::vector<uint8_t> back;
    BOOST_TEST_REQUIRE(decodes(codec_test::base64_encode(data), &back));
    BOOST_TEST_REQUIRE(back == data);
  }
}

BOOST_AUTO_TEST_CASE(length_limits) {
  const std::string prefix = "data:image/png;base64,";
  // 5,592,408 characters is the largest accepted encoded length...
  std::string at_limit(5'592'408, 'A');
  const auto r = parse_image_data_url(prefix + at_limit);
  // ...which decodes to 4,194,306 bytes: over the decoded limit.
  BOOST_TEST(r.error().detail == "image exceeds 4 MiB");
  BOOST_TEST(detail_of(prefix + std::string(5'592'412, 'A')) == "encoded image exceeds 4 MiB");
  // Exactly 4 MiB decoded is fine at this stage (4,194,304 bytes = 5,592,404 chars + "==").
  std::string exact(5'592'404, 'A');
  exact += "AA==";
  const auto four = parse_image_data_url(prefix + exact);
  BOOST_TEST_REQUIRE(four.ok());
  BOOST_TEST(four->bytes.size() == 4'194'304u);
  // One byte more is refused; the length check comes before the base64 check.
  std::string over(5'592'404, 'A');
  over += "AAA=";
  BOOST_TEST(detail_of(prefix + over) == "image exceeds 4 MiB");
  BOOST_TEST(detail_of(prefix + std::string(5'592'409, '!')) == "encoded image exceeds 4 MiB");
}

BOOST_AUTO_TEST_CASE(empty_payload_is_invalid_image_data) {
  const auto r = decode_image_data_url("data:image/png;base64,");
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().status == 422);
  BOOST_TEST(r.error().detail == "invalid image data");
  const auto junk = decode_image_data_url("data:image/jpeg;base64,QUJD");
  BOOST_TEST(junk.error().detail == "invalid image data");
}
