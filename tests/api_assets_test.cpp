// The System One asset forms (contract.md 1.7): inline and multipart assets named from a string
// or one-value object state resolve to the data URL of today's form; every 422 case says which.
#define BOOST_TEST_MODULE api_assets
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "api/body_decoding.hpp"
#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "codec/data_url.hpp"
#include "codec/image_decoder.hpp"
#include "test_support.hpp"

using namespace cua_s1;

namespace {

const std::string reference = "<image:2ae4b9dc3f4b4a89bfa97f398d04d38e>";
const std::string questions =
    R"({"next":{"type":"choice","instructions":"Save it","criteria":{"save":"Click Save","wait":null}}})";
const std::string inline_png = R"({"type":"image","format":"png","data_base64":"AAAA"})";
const std::string part_0 = R"({"type":"image","part":"asset-0"})";
const std::string boundary = "0123456789abcdef0123456789abcdef";

std::string body_with(const std::string& state, const std::string& assets,
                      const std::string& question_json = questions) {
  return R"({"state":)" + state + R"(,"model":"cua-s1-4b-0.2","questions":)" + question_json +
         (assets.empty() ? "" : R"(,"assets":)" + assets) + "}";
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

// A multipart body as the SDK's with_assets writes it: `request` first, then the parts.
decision_body multipart(const std::string& json,
                        const std::vector<std::pair<std::string, std::string>>& parts) {
  decision_body body;
  body.content_type = "multipart/form-data; boundary=" + boundary;
  auto add = [&](const std::string& name, const std::string& type, const std::string& content) {
    body.bytes += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name +
                  "\"; filename=\"" + name + "\"\r\nContent-Type: " + type + "\r\n\r\n" +
                  content + "\r\n";
  };
  body.bytes.clear();
  add("request", "application/json", json);
  for (const auto& [name, content] : parts) add(name, "image/png", content);
  body.bytes += "--" + boundary + "--\r\n";
  return body;
}

outcome<decision_request> validate_json(const std::string& json) {
  return decode_decision_body(decision_body(json));
}

void expect_422(const outcome<decision_request>& result, const std::string& detail) {
  BOOST_REQUIRE(!result.ok());
  BOOST_TEST(result.error().status == 422);
  BOOST_TEST(result.error().detail == detail);
}

const std::string png_bytes("\x89PNG\r\n\x1a\n rest of a picture", 27);

}  // namespace

BOOST_AUTO_TEST_CASE(inline_assets_resolve_to_the_data_url) {
  for (const std::string& state : std::vector<std::string>{quoted("shot"), R"({"screen":"shot"})", R"(["shot"])"}) {
    auto request = validate_json(body_with(state, R"({"shot":)" + inline_png + "}"));
    BOOST_TEST_REQUIRE(request.ok(), (request.ok() ? "" : request.error().detail));
    BOOST_TEST(request->image_data_url == "data:image/png;base64,AAAA");
    BOOST_TEST(request->questions.size() == 1u);
  }
  for (const std::string& format : std::vector<std::string>{"jpg", "jpeg"}) {
    auto request = validate_json(body_with(
        quoted(reference), "{" + quoted(reference) + R"(:{"type":"image","format":")" + format +
                               R"(","data_base64":"BBBB"}})"));
    BOOST_REQUIRE(request.ok());
    BOOST_TEST(request->image_data_url == "data:image/jpeg;base64,BBBB");
  }
}

BOOST_AUTO_TEST_CASE(multipart_parts_resolve_to_the_data_url_of_their_bytes) {
  const std::string assets = "{" + quoted(reference) + ":" + part_0 + "}";
  for (const std::string& state : std::vector<std::string>{quoted(reference), "{\"screen\":" + quoted(reference) + "}"}) {
    auto request = decode_decision_body(multipart(body_with(state, assets), {{"asset-0", png_bytes}}));
    BOOST_TEST_REQUIRE(request.ok(), (request.ok() ? "" : request.error().detail));
    BOOST_TEST(request->image_data_url == make_image_data_url(image_mime::png, png_bytes));
  }
  const std::string jpeg_bytes("\xff\xd8\xff\xe0 a jpeg", 11);
  auto jpeg = decode_decision_body(multipart(body_with(quoted(reference), assets), {{"asset-0", jpeg_bytes}}));
  BOOST_REQUIRE(jpeg.ok());
  BOOST_TEST(jpeg->image_data_url == make_image_data_url(image_mime::jpeg, jpeg_bytes));
  // Today's data URL form inside a multipart body, and inline assets there too.
  const std::string data_url_json = body_with(R"({"image":"data:image/png;base64,AAAA"})", "");
  BOOST_TEST(decode_decision_body(multipart(data_url_json, {}))->image_data_url ==
             "data:image/png;base64,AAAA");
  BOOST_TEST(decode_decision_body(multipart(body_with(quoted("s"), R"({"s":)" + inline_png + "}"), {}))
                 ->image_data_url == "data:image/png;base64,AAAA");
}

BOOST_AUTO_TEST_CASE(the_data_url_form_is_unchanged) {
  auto request = validate_json(body_with(R"({"image":"data:image/png;base64,AAAA"})", ""));
  BOOST_REQUIRE(request.ok());
  BOOST_TEST(request->image_data_url == "data:image/png;base64,AAAA");
  expect_422(validate_json(body_with(quoted("shot"), "")),
             "state must contain exactly one image data URL");
}

BOOST_AUTO_TEST_CASE(assets_without_a_state_naming_one_is_an_unknown_key) {
  expect_422(validate_json(body_with(R"({"image":"data:image/png;base64,AAAA"})",
                                     R"({"shot":)" + inline_png + "}")),
             "request must contain model, state and questions only");
}

BOOST_AUTO_TEST_CASE(state_cases_are_422_with_their_reason) {
  const std::string two = R"({"a":)" + inline_png + R"(,"b":)" + inline_png + "}";
  const std::string one = R"({"a":)" + inline_png + "}";
  expect_422(validate_json(body_with(R"(["a","the page shows a dialog"])", one)),
             "state must hold one image and no text");
  expect_422(validate_json(body_with(R"({"screen":"a","note":"text"})", one)),
             "state must hold one image and no text");
  expect_422(validate_json(body_with(R"(["a","b"])", two)), "state must hold exactly one image");
  expect_422(validate_json(body_with(R"({"x":"a","y":"a"})", one)), "state must hold exactly one image");
  expect_422(validate_json(body_with(quoted("b"), one)),
             "state names an asset that assets does not hold");
  expect_422(validate_json(body_with(quoted("a"), two)),
             "assets holds an asset that state does not use");
  for (const std::string& state : std::vector<std::string>{"5", "{}", "[]", R"({"screen":1})", R"(["a",null])"})
    BOOST_TEST_CONTEXT(state) {
      expect_422(validate_json(body_with(state, one)), "state must name one image asset");
    }
}

// More entries than a request could use are refused before any is looked at: the checks of
// every asset against every question's text stay small.
BOOST_AUTO_TEST_CASE(more_than_eight_assets_is_422) {
  auto assets_of = [](int count) {
    std::string map = "{";
    for (int i = 0; i < count; ++i)
      map += std::string(i ? "," : "") + quoted("a" + std::to_string(i)) + ":" + inline_png;
    return map + "}";
  };
  expect_422(validate_json(body_with(quoted("a0"), assets_of(9))), "assets may hold at most 8 entries");
  expect_422(validate_json(body_with(quoted("a0"), assets_of(8))),
             "assets holds an asset that state does not use");
}

BOOST_AUTO_TEST_CASE(an_asset_reference_in_text_is_422) {
  const std::string assets = "{" + quoted(reference) + ":" + inline_png + "}";
  const std::string in_goal = R"({"q":{"type":"choice","instructions":"Look at )" + reference +
                              R"(","criteria":{"a":null}}})";
  const std::string in_label = R"({"q":{"type":"choice","instructions":null,"criteria":{"a":{"see":")" +
                               reference + R"("}}}})";
  const std::string in_key = R"({"q":{"type":"choice","instructions":null,"criteria":{")" +
                             reference + R"(":null}}})";
  for (const auto& q : {in_goal, in_label, in_key})
    expect_422(validate_json(body_with(quoted(reference), assets, q)),
               "instructions and criteria must not contain an image reference");
  // A plain name is a word, not a reference: "shot" inside "screenshot" is text.
  const std::string screenshot = R"({"q":{"type":"choice","instructions":"a screenshot","criteria":{"a":null}}})";
  BOOST_TEST(validate_json(body_with(quoted("shot"), R"({"shot":)" + inline_png + "}", screenshot)).ok());
}

BOOST_AUTO_TEST_CASE(bad_entries_are_422) {
  const std::string shape =
      "assets entries must be {\"type\": \"image\", \"format\": \"png\"|\"jpg\"|\"jpeg\", "
      "\"data_base64\": ...} or {\"type\": \"image\", \"part\": ...}";
  const std::string type = "assets entries must be {\"type\": \"image\", ...}";
  struct refused {
    std::string assets;
    std::string detail;
  };
  const std::vector<refused> cases = {
      {"[]", "assets must map names to image entries"},
      {"{}", "assets must map names to image entries"},
      {R"("a")", "assets must map names to image entries"},
      {R"({"a":"data:image/png;base64,AAAA"})", type},
      {R"({"a":{"type":"audio","format":"png","data_base64":"AAAA"}})", type},
      {R"({"a":{"format":"png","data_base64":"AAAA"}})", type},
      {R"({"a":{"type":"image","format":"png"}})", shape},
      {R"({"a":{"type":"image","format":"png","data_base64":"AAAA","extra":1}})", shape},
      {R"({"a":{"type":"image","format":"png","data_base64":1}})", shape},
      {R"({"a":{"type":"image","format":"png","data_base64":"AAAA","part":"asset-0"}})", shape},
      {R"({"a":{"type":"image","format":"gif","data_base64":"AAAA"}})",
       "asset format must be png, jpg or jpeg"},
      {R"({"a":{"type":"image","format":"PNG","data_base64":"AAAA"}})",
       "asset format must be png, jpg or jpeg"},
      {R"({"a":{"type":"image","part":"asset-0"}})",
       "assets entries with a part need a multipart/form-data body"},
  };
  for (const auto& c : cases)
    BOOST_TEST_CONTEXT(c.assets) { expect_422(validate_json(body_with(quoted("a"), c.assets)), c.detail); }
}

BOOST_AUTO_TEST_CASE(part_cases_are_422) {
  const std::string one = "{" + quoted(reference) + ":" + part_0 + "}";
  const std::string json = body_with(quoted(reference), one);
  expect_422(decode_decision_body(multipart(json, {})),
             "an asset names a part the body does not hold");
  expect_422(decode_decision_body(multipart(
                 body_with(quoted(reference), "{" + quoted(reference) +
                                                  R"(:{"type":"image","part":"request"}})"),
                 {})),
             "an asset names a part the body does not hold");
  expect_422(decode_decision_body(multipart(json, {{"asset-0", png_bytes}, {"asset-1", png_bytes}})),
             "a part is claimed by no asset");
  const std::string twice = "{" + quoted(reference) + ":" + part_0 + R"(,"other":)" + part_0 + "}";
  expect_422(decode_decision_body(multipart(body_with(quoted(reference), twice), {{"asset-0", png_bytes}})),
             "a part is claimed by more than one asset");
  expect_422(decode_decision_body(multipart(body_with(R"({"image":"data:image/png;base64,AAAA"})", ""),
                                            {{"asset-0", png_bytes}})),
             "a part is claimed by no asset");
  // No request part at all.
  decision_body no_request = multipart("{}", {{"asset-0", png_bytes}});
  const std::string request_head = "name=\"request\"; filename=\"request\"";
  no_request.bytes.replace(no_request.bytes.find(request_head), request_head.size(),
                           "name=\"other\"; filename=\"request\"");
  expect_422(decode_decision_body(no_request), "a multipart body needs a part named request");
}

BOOST_AUTO_TEST_CASE(image_limits_apply_to_assets_as_to_data_urls) {
  // A part over 4 MiB, an inline base64 over the encoded limit.
  const std::string big(max_decoded_image_bytes + 1, 'x');
  const std::string one = "{" + quoted(reference) + ":" + part_0 + "}";
  expect_422(decode_decision_body(multipart(body_with(quoted(reference), one), {{"asset-0", big}})),
             "image exceeds 4 MiB");
  expect_422(decode_decision_body(multipart(body_with(quoted(reference), one),
                                            {{"asset-0", "GIF89a and more"}})),
             "only inline PNG/JPEG images are supported");
  auto long_inline = validate_json(body_with(
      quoted("a"), R"({"a":{"type":"image","format":"png","data_base64":")" +
                       std::string(max_encoded_image_chars + 4, 'A') + "\"}}"));
  BOOST_REQUIRE(long_inline.ok());
  auto decoded = decode_image_data_url(long_inline->image_data_url);
  BOOST_REQUIRE(!decoded.ok());
  BOOST_TEST(decoded.error().detail == "encoded image exceeds 4 MiB");
  // The inline format must agree with the bytes, as a data URL's prefix must.
  const std::string small = test::read_file(test::fixture_path("prepare/requests/std-small.json"));
  const std::string marker = "data:image/png;base64,";
  const size_t start = small.find(marker) + marker.size();
  const std::string png_base64 = small.substr(start, small.find('"', start) - start);
  auto as_jpeg = validate_json(body_with(
      quoted("a"), R"({"a":{"type":"image","format":"jpeg","data_base64":")" + png_base64 + "\"}}"));
  BOOST_REQUIRE(as_jpeg.ok());
  BOOST_TEST(decode_image_data_url(as_jpeg->image_data_url).error().detail ==
             "image format does not match its MIME type");
  auto as_png = validate_json(body_with(
      quoted("a"), R"({"a":{"type":"image","format":"png","data_base64":")" + png_base64 + "\"}}"));
  BOOST_TEST(decode_image_data_url(as_png->image_data_url).ok());
  // The part's bytes are the same picture.
  auto as_part = decode_decision_body(multipart(body_with(quoted(reference), one),
                                                {{"asset-0", test::base64_decode(png_base64)}}));
  BOOST_REQUIRE(as_part.ok());
  BOOST_TEST(as_part->image_data_url == marker + png_base64);
}

BOOST_AUTO_TEST_CASE(media_types) {
  BOOST_TEST((parse_body_media_type("") == body_media::json));
  BOOST_TEST((parse_body_media_type("Application/JSON; charset=utf-8") == body_media::json));
  BOOST_TEST((parse_body_media_type("multipart/form-data; boundary=x") == body_media::multipart));
  BOOST_TEST(!parse_body_media_type("text/plain").has_value());
  decision_body plain("{}");
  plain.content_type = "text/plain";
  BOOST_TEST(decode_decision_body(plain).error().status == 415);
  decision_body brotli("{}");
  brotli.content_encoding = "br";
  BOOST_TEST(decode_decision_body(brotli).error().status == 415);
}
