// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it.
#pragma once

#include <string>
#include <string_view>

#include "api/json_value.hpp"
#include "common/json_text.hpp"  // append_json_string_body, python_float_repr

namespace cua_s1 {

// json.dumps(value, ensure_ascii=False): separators ", " and ": ", key order kept.
std::string python_json_dumps(const json_value& value);

}  // namespace cua_s1
