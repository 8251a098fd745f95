// The Bearer check of http/api_keys: any configured key accepted, the scheme in any case, no
// prefix, suffix or other scheme accepted, and a missing key told apart from a wrong one.
#define BOOST_TEST_MODULE api_keys
#include <boost/test/unit_test.hpp>

#include "http/api_keys.hpp"

#include <ostream>

using namespace cua_s1;

namespace cua_s1 {
std::ostream& operator<<(std::ostream& out, key_check check) {
  return out << (check == key_check::accepted ? "accepted"
                 : check == key_check::missing ? "missing"
                                               : "invalid");
}
}  // namespace cua_s1

BOOST_AUTO_TEST_CASE(no_key_configured_is_empty) { BOOST_TEST(api_key_set().empty()); }

BOOST_AUTO_TEST_CASE(each_configured_key_is_accepted) {
  const api_key_set keys({"first-key", "second-key"});
  BOOST_TEST(!keys.empty());
  BOOST_TEST(keys.check("Bearer first-key") == key_check::accepted);
  BOOST_TEST(keys.check("Bearer second-key") == key_check::accepted);
  BOOST_TEST(keys.check("bearer second-key") == key_check::accepted);
  BOOST_TEST(keys.check("BEARER\tfirst-key ") == key_check::accepted);
}

BOOST_AUTO_TEST_CASE(other_keys_are_invalid) {
  const api_key_set keys({"first-key", "second-key"});
  for (const char* header : {"Bearer first-ke", "Bearer first-key2", "Bearer xfirst-key",
                             "Bearer First-key", "Bearer first-key second-key",
                             "Bearer first-keysecond-key"})
    BOOST_TEST(keys.check(header) == key_check::invalid, header);
}

BOOST_AUTO_TEST_CASE(no_bearer_key_is_missing) {
  const api_key_set keys({"first-key"});
  for (const char* header : {"", "Bearer", "Bearer ", "Bearer   ", "Basic first-key",
                             "Bearerfirst-key", "first-key", "Token first-key"})
    BOOST_TEST(keys.check(header) == key_check::missing, header);
}
