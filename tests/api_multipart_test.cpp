// The multipart/form-data parser: what the SDK, curl and browsers write is read back part by part;
// malformed framing is 400, too many parts or bytes 413, duplicate names 400.
#define BOOST_TEST_MODULE api_multipart
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "api/multipart_form.hpp"

using namespace cua_s1;

namespace {

const std::string boundary = "2ae4b9dc3f4b4a89bfa97f398d04d38e";
const std::string content_type = "multipart/form-data; boundary=" + boundary;

struct part_spec {
  std::string name;
  std::string content;
  std::string type = "application/octet-stream";
};

// Written as the SDK's _core/multipart.py encode_multipart writes a body.
std::string sdk_body(const std::vector<part_spec>& parts) {
  std::string body;
  for (const auto& p : parts)
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + p.name +
            "\"; filename=\"" + p.name + "\"\r\nContent-Type: " + p.type + "\r\n\r\n" +
            p.content + "\r\n";
  return body + "--" + boundary + "--\r\n";
}

void expect_status(const std::string& type, const std::string& body, int status) {
  auto form = parse_multipart_form(type, body);
  BOOST_TEST_CONTEXT("body " << body.substr(0, 200)) {
    BOOST_REQUIRE(!form.ok());
    BOOST_TEST(form.error().status == status);
    BOOST_TEST(!form.error().detail.empty());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_the_sdk_form_in_any_part_order) {
  const std::string json = R"({"model":"cua-s1-4b-0.2"})";
  const std::string image("\x89PNG\r\n\x1a\n\0\r\n--not-it\r\n", 21);
  for (bool request_first : {true, false}) {
    std::vector<part_spec> parts = {{"request", json, "application/json"},
                                    {"asset-0", image, "image/png"}};
    if (!request_first) std::swap(parts[0], parts[1]);
    auto form = parse_multipart_form(content_type, sdk_body(parts));
    BOOST_REQUIRE(form.ok());
    BOOST_REQUIRE(form->parts.size() == 2u);
    BOOST_REQUIRE(form->find("request"));
    BOOST_TEST(form->find("request")->content == json);
    BOOST_TEST(form->find("request")->content_type == "application/json");
    BOOST_TEST(form->find("asset-0")->content == image);
    BOOST_TEST(form->parts[0].name == (request_first ? "request" : "asset-0"));
  }
}

BOOST_AUTO_TEST_CASE(reads_curl_and_browser_forms) {
  // curl -F: a quoted boundary of dashes, no Content-Type on a plain field, a padded delimiter.
  const std::string b = "------------------------d74496d66958873e";
  const std::string body = "--" + b + "\r\nContent-Disposition: form-data; name=request\r\n\r\n{}\r\n--" +
                           b + " \t\r\ncontent-disposition: FORM-DATA; filename=\"a b.png\"; name=\"shot\"" +
                           "\r\n\r\n\r\n--" + b + "--";
  auto form = parse_multipart_form("Multipart/Form-Data; charset=utf-8; boundary=\"" + b + "\"", body);
  BOOST_TEST_REQUIRE(form.ok(), (form.ok() ? "" : form.error().detail));
  BOOST_REQUIRE(form->parts.size() == 2u);
  BOOST_TEST(form->find("request")->content == "{}");
  BOOST_TEST(form->find("request")->content_type == "");
  BOOST_TEST(form->find("shot")->content == "");  // empty content
}

BOOST_AUTO_TEST_CASE(the_boundary_inside_content_is_content_unless_it_is_a_delimiter_line) {
  const std::string inside = "a--" + boundary + "\r\n--" + boundary + "x\r\n--" + boundary +
                             "-\r\n\r\n--" + boundary + "0--";
  auto form = parse_multipart_form(content_type, sdk_body({{"request", inside}}));
  BOOST_TEST_REQUIRE(form.ok(), (form.ok() ? "" : form.error().detail));
  BOOST_TEST(form->find("request")->content == inside);
}

BOOST_AUTO_TEST_CASE(crlf_edges_of_content_are_kept) {
  for (const std::string& content : std::vector<std::string>{"\r\n", "\r\n\r\n", "x\r", "\n", "\r\n-", "--"}) {
    auto form = parse_multipart_form(content_type, sdk_body({{"request", content}}));
    BOOST_REQUIRE(form.ok());
    BOOST_TEST(form->find("request")->content == content);
  }
}

BOOST_AUTO_TEST_CASE(a_missing_or_malformed_boundary_parameter_is_400) {
  const std::string body = sdk_body({{"request", "{}"}});
  for (const std::string& type : std::vector<std::string>{
        "multipart/form-data", "multipart/form-data;", "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\"unterminated", "multipart/form-data; boundary=a{b",
        "multipart/form-data; boundary=" + std::string(71, 'a'),
        "multipart/form-data; boundary=\"ends with space \"",
        "multipart/form-data; boundary=a; boundary=a", "multipart/form-data; name"})
    BOOST_TEST_CONTEXT(type) { expect_status(type, body, 400); }
  BOOST_TEST(multipart_boundary("multipart/form-data; boundary=\"x y\"").ok());
  // At most 16 parameters: a header of thousands is refused, not compared pairwise.
  std::string many = "multipart/form-data; boundary=" + boundary;
  for (int i = 1; i < 16; ++i) many += "; p" + std::to_string(i) + "=x";
  BOOST_TEST(multipart_boundary(many).ok());
  expect_status(many + "; p16=x", body, 400);
}

BOOST_AUTO_TEST_CASE(malformed_framing_is_400) {
  const std::string good = sdk_body({{"request", "{}"}});
  const std::string dash = "--" + boundary;
  const std::vector<std::string> bodies = {
      "",                                                        // nothing
      "preamble\r\n" + good,                                     // a preamble
      good.substr(0, good.size() - 4),                           // no close delimiter
      good.substr(0, good.size() - 2) + "\r\nmore",              // an epilogue
      good + "\r\n",                                             // two CRLFs after the close
      dash + "x\r\n" + good.substr(dash.size() + 2),             // the boundary extended
      dash + "\r\nContent-Disposition: form-data; name=\"request\"\r\n{}\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{}",  // unterminated
      dash + "\r\nContent-Disposition form-data\r\n\r\n{}\r\n" + dash + "--",   // no colon
      dash + "\r\n Content-Disposition: form-data; name=a\r\n\r\n\r\n" + dash + "--",  // fold
      dash + "\r\nContent-Type: text/plain\r\n\r\n{}\r\n" + dash + "--",  // no disposition
      dash + "\r\nContent-Disposition: attachment; name=a\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data\r\n\r\n\r\n" + dash + "--",  // no name
      dash + "\r\nContent-Disposition: form-data; name=\"\"\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; "
             "name=a\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a\r\nContent-Type: a\r\nContent-Type: "
             "b\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: "
             "base64\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a\r\nX: \x01\r\n\r\n\r\n" + dash + "--",
      dash + "\r\nContent-Disposition: form-data; name=a\r\nX: " + std::string(2000, 'x') +
          "\r\n\r\n\r\n" + dash + "--",
  };
  for (const auto& body : bodies) expect_status(content_type, body, 400);
}

BOOST_AUTO_TEST_CASE(two_parts_of_one_name_are_400) {
  expect_status(content_type, sdk_body({{"request", "{}"}, {"asset-0", "a"}, {"asset-0", "b"}}),
                400);
  expect_status(content_type, sdk_body({{"request", "{}"}, {"request", "{}"}}), 400);
}

BOOST_AUTO_TEST_CASE(more_than_eight_parts_or_eight_mib_is_413) {
  std::vector<part_spec> parts;
  for (int i = 0; i < 8; ++i) parts.push_back({"p" + std::to_string(i), "x"});
  BOOST_TEST(parse_multipart_form(content_type, sdk_body(parts)).ok());
  parts.push_back({"p8", "x"});
  expect_status(content_type, sdk_body(parts), 413);
  expect_status(content_type, sdk_body({{"request", std::string(max_form_bytes, 'x')}}), 413);
}

BOOST_AUTO_TEST_CASE(an_empty_form_has_no_parts) {
  auto form = parse_multipart_form(content_type, "--" + boundary + "--\r\n");
  BOOST_REQUIRE(form.ok());
  BOOST_TEST(form->parts.empty());
  BOOST_TEST(!form->find("request"));
}
