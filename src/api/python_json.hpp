// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it.
#pragma once

#include <string>
#include <string_view>

#include "api/json_value.hpp"

namespace cua_s1 {

// Appends `text` as a JSON string body (no quotes): `"` `\` and control characters escaped,
// everything else (non-ASCII included) kept, as Python's encoder does.
void append_json_string_body(std::string& out, std::string_view text);

// json.dumps(value, ensure_ascii=False): separators ", " and ": ", key order kept.
std::string python_json_dumps(const json_value& value);

// Python's repr() of a finite double: shortest round-trip digits, "1.0", "1e-07", "1e+16".
std::string python_float_repr(double value);

}  // namespace cua_s1
