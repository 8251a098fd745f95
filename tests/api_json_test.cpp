// Strict JSON decoding, json.dumps layout and float repr against CPython's recorded behaviour.
#define BOOST_TEST_MODULE api_json
#include <boost/test/unit_test.hpp>
#include <cstring>

#include "api/python_json.hpp"
#include "api/strict_json.hpp"
#include "test_support.hpp"

using namespace cua_s1;
namespace json = boost::json;

BOOST_AUTO_TEST_CASE(decode_matches_cpython_on_recorded_bodies) {
  auto cases = test::read_json_fixture("api/decode_cases.json").as_array();
  BOOST_REQUIRE_GT(cases.size(), 400u);
  for (const auto& item : cases) {
    const auto& c = item.as_object();
    std::string body = test::base64_decode(std::string(c.at("body_base64").as_string()));
    auto parsed = parse_strict_json(body);
    int expected_status = static_cast<int>(c.at("status").as_int64());
    BOOST_TEST_CONTEXT("body (base64) " << c.at("body_base64").as_string()) {
      if (expected_status == 200) {
        BOOST_TEST(parsed.ok());
        if (!parsed.ok()) BOOST_TEST_MESSAGE(parsed.error().detail);
      } else {
        BOOST_REQUIRE(!parsed.ok());
        BOOST_TEST(parsed.error().status == 400);
        BOOST_TEST(parsed.error().detail == std::string(c.at("detail").as_string()));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(contract_examples_are_rejected_with_400) {
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "request body must contain valid JSON and UTF-8 text"},
      {R"({"x":1,"x":2})", "duplicate JSON keys are not supported"},
      {R"({"x":{"y":1,"y":2}})", "duplicate JSON keys are not supported"},
      {R"({"x":NaN})", "non-finite JSON numbers are not supported"},
      {R"({"x":Infinity})", "non-finite JSON numbers are not supported"},
      {R"({"x":1e400})", "request body must contain valid JSON and UTF-8 text"},
      {"[]", "request must be a JSON object"},
      {"null", "request must be a JSON object"},
      {"{\"x\":\"\xFF\"}", "request body must contain valid JSON and UTF-8 text"},
      {R"({"x":"\ud800"})", "request body must contain valid JSON and UTF-8 text"},
      {R"({"\ud800":1})", "request body must contain valid JSON and UTF-8 text"},
      {std::string(2000, '['), "request body must contain valid JSON and UTF-8 text"},
      {std::string("\xFF\xFE{\0}\0", 6), "request body must contain valid JSON and UTF-8 text"},
      {"\xEF\xBB\xBF{}", "request body must contain valid JSON and UTF-8 text"},
  };
  for (const auto& [body, detail] : cases) {
    auto parsed = parse_strict_json(body);
    BOOST_REQUIRE(!parsed.ok());
    BOOST_TEST(parsed.error().status == 400);
    BOOST_TEST(parsed.error().detail == detail);
  }
}

// An 8 MiB "[0,0,...]" once took 1.5 s and +352 MiB to parse: the number of values is capped.
BOOST_AUTO_TEST_CASE(value_count_limit_is_enforced) {
  auto with_values = [](size_t values) {  // the object, its array and values - 2 zeros
    std::string body = "{\"a\":[";
    for (size_t i = 0; i + 2 < values; ++i) body += i ? ",0" : "0";
    return body + "]}";
  };
  BOOST_TEST(parse_strict_json(with_values(max_json_values)).ok());
  const auto over = parse_strict_json(with_values(max_json_values + 1));
  BOOST_TEST_REQUIRE(!over.ok());
  BOOST_TEST(over.error().status == 400);
  BOOST_TEST(over.error().detail == "request body must contain valid JSON and UTF-8 text");
  // Strings, literals and containers count alike.
  std::string mixed = "{\"a\":[";
  for (size_t i = 0; i < max_json_values; ++i) mixed += i % 3 == 0 ? "\"x\"," : i % 3 == 1 ? "null," : "{},";
  BOOST_TEST(!parse_strict_json(mixed + "1]}").ok());
}

BOOST_AUTO_TEST_CASE(nesting_limit_is_enforced_at_the_documented_depth) {
  auto nested = [](int depth) {
    return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  BOOST_TEST(parse_strict_json(nested(max_json_depth)).ok());
  BOOST_TEST(!parse_strict_json(nested(max_json_depth + 1)).ok());
}

BOOST_AUTO_TEST_CASE(members_keep_document_order_and_escapes_decode) {
  auto parsed = parse_strict_json(R"({"b":1,"a":"\u00e9\ud83d\ude00\n","c":[true,null,-0]})");
  BOOST_REQUIRE(parsed.ok());
  const auto& members = parsed->members;
  BOOST_REQUIRE_EQUAL(members.size(), 3u);
  BOOST_TEST(members[0].key == "b");
  BOOST_TEST(members[1].value.text == "\xC3\xA9\xF0\x9F\x98\x80\n");
  BOOST_TEST(members[2].value.items[2].text == "0");  // Python: int("-0") == 0
}

BOOST_AUTO_TEST_CASE(dumps_matches_cpython) {
  auto cases = test::read_json_fixture("api/dumps_cases.json").as_array();
  BOOST_REQUIRE_GT(cases.size(), 500u);
  for (const auto& item : cases) {
    const auto& c = item.as_object();
    std::string body(c.at("body").as_string());
    auto parsed = parse_strict_json(body);
    BOOST_TEST_CONTEXT("body " << body) {
      BOOST_REQUIRE(parsed.ok());
      const json_value* v = parsed->find("v");
      BOOST_REQUIRE(v);
      BOOST_TEST(python_json_dumps(*v) == std::string(c.at("dumps").as_string()));
      if (c.at("escaped_string_body").is_string()) {
        std::string escaped;
        append_json_string_body(escaped, v->text);
        BOOST_TEST(escaped == std::string(c.at("escaped_string_body").as_string()));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(float_repr_matches_cpython) {
  auto cases = test::read_json_fixture("api/float_repr_cases.json").as_array();
  BOOST_REQUIRE_GT(cases.size(), 2000u);
  for (const auto& item : cases) {
    const auto& c = item.as_object();
    uint64_t bits = std::stoull(std::string(c.at("bits").as_string()), nullptr, 16);
    double value;
    std::memcpy(&value, &bits, sizeof value);
    BOOST_TEST(python_float_repr(value) == std::string(c.at("repr").as_string()));
  }
  BOOST_TEST(python_float_repr(1e-7) == "1e-07");
  BOOST_TEST(python_float_repr(1e16) == "1e+16");
  BOOST_TEST(python_float_repr(0.9975274205207825) == "0.9975274205207825");
}

// Strings are scanned eight bytes at a time: a quote, an escape, a control character or UTF-8
// at every offset of a long plain run (and near its end) is found exactly where it is.
BOOST_AUTO_TEST_CASE(string_specials_are_found_at_every_offset) {
  for (size_t at = 0; at < 40; ++at) {
    for (size_t after : {size_t{0}, size_t{3}, size_t{17}}) {
      BOOST_TEST_CONTEXT("offset " << at << ", then " << after) {
        const std::string before(at, 'A'), rest(after, 'b');
        auto text_of = [](const std::string& body) -> std::string {
          auto parsed = parse_strict_json(body);
          return parsed.ok() ? parsed->find("k")->text : "error: " + parsed.error().detail;
        };
        BOOST_TEST(text_of("{\"k\":\"" + before + "\"}") == before);
        BOOST_TEST(text_of("{\"k\":\"" + before + "\\n" + rest + "\"}") == before + "\n" + rest);
        BOOST_TEST(text_of("{\"k\":\"" + before + "\\\"" + rest + "\"}") == before + "\"" + rest);
        BOOST_TEST(text_of("{\"k\":\"" + before + "\xC3\xA9\x7F" + rest + "\"}") ==
                   before + "\xC3\xA9\x7F" + rest);
        for (const char control : {'\x01', '\x1F', '\t', '\0'}) {
          auto parsed = parse_strict_json("{\"k\":\"" + before + control + rest + "\"}");
          BOOST_TEST_REQUIRE(!parsed.ok());
          BOOST_TEST(parsed.error().status == 400);
        }
      }
    }
  }
}
