// The pieces of JSON text every layer writes the same way Python's json module does: string
// bodies (the logger, the API's answers and errors) and floats (Python's repr).
#pragma once

#include <string>
#include <string_view>

namespace cua_s1 {

// Appends `text` as a JSON string body (no quotes): `"` `\` and control characters escaped,
// everything else (non-ASCII included) kept, as Python's encoder with ensure_ascii=False does.
void append_json_string_body(std::string& out, std::string_view text);

// Python's repr() of a finite double: shortest round-trip digits, "1.0", "1e-07", "1e+16".
std::string python_float_repr(double value);

}  // namespace cua_s1
