// Strict request-body JSON parsing with the 400 rules of spec/contract.md section 3.1.
#pragma once

#include <cstddef>
#include <string_view>

#include "api/json_value.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// Deepest array/object nesting accepted; deeper bodies get the generic 400.
inline constexpr int max_json_depth = 900;  // under CPython's recursion limit (1000)
// Most values (strings, numbers, literals, arrays, objects) a body may hold; more get the
// generic 400 as soon as the parser counts them. A valid request has far fewer: its texts are at
// most 16,384 characters a question when serialized, so under ~44,000 values over 8 questions.
// It bounds the parsed tree (~44x the body's size for an 8 MiB "[0,0,...]").
inline constexpr size_t max_json_values = 100'000;

// Parses `body` as Python's json.loads would after a strict UTF-8 decode, and rejects (400):
// invalid UTF-8 or JSON, a BOM, trailing data, duplicate keys at any depth, NaN/Infinity,
// floats that overflow, integers over 4300 digits, lone surrogate escapes, nesting deeper than
// max_json_depth, more than max_json_values values, and a top level that is not an object.
outcome<json_value> parse_strict_json(std::string_view body);

}  // namespace cua_s1
