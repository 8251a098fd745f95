// W3C traceparent validation (http/trace_context): version 00 exactly, later versions with more
// fields, and every malformed form ignored.
#define BOOST_TEST_MODULE trace_context
#include <boost/test/unit_test.hpp>

#include "http/trace_context.hpp"

using namespace cua_s1;

namespace {
const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string valid = "00-" + trace_id + "-00f067aa0ba902b7-01";
}  // namespace

BOOST_AUTO_TEST_CASE(a_valid_traceparent_is_kept_with_its_trace_id) {
  BOOST_TEST(valid_traceparent(valid) == valid);
  BOOST_TEST(trace_id_of(valid) == trace_id);
  const std::string flags_00 = "00-" + trace_id + "-00f067aa0ba902b7-00";
  BOOST_TEST(valid_traceparent(flags_00) == flags_00);
  const std::string later = "cc-" + trace_id + "-00f067aa0ba902b7-09-what-comes-next";
  // A later version's extra fields are dropped: what is echoed stays 55 bytes.
  BOOST_TEST(valid_traceparent(later) == later.substr(0, 55));
  BOOST_TEST(valid_traceparent(later + std::string(60000, 'a')) == later.substr(0, 55));
  BOOST_TEST(trace_id_of("") == "");
}

BOOST_AUTO_TEST_CASE(a_malformed_traceparent_is_ignored) {
  const std::vector<std::string> malformed = {
      "",
      valid.substr(0, 54),
      valid + "-",
      valid + "-more",  // version 00 has exactly four fields
      "ff-" + trace_id + "-00f067aa0ba902b7-01",
      "0g-" + trace_id + "-00f067aa0ba902b7-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-" + trace_id + "-0000000000000000-01",
      "00-" + trace_id + "-00F067AA0BA902B7-01",
      "00-" + trace_id + "-00f067aa0ba902b7-0x",
      "00_" + trace_id + "-00f067aa0ba902b7-01",
      "00-" + trace_id + "_00f067aa0ba902b7-01",
      "00-" + trace_id + "-00f067aa0ba902b7_01",
      "cc-" + trace_id + "-00f067aa0ba902b7-01x",  // a later version: more only after a '-'
  };
  for (const std::string& header : malformed)
    BOOST_TEST(valid_traceparent(header).empty(), header);
}
