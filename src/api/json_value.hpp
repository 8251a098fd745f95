// An order-preserving JSON document tree, as Python's json module sees it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

struct json_member;

struct json_value {
  enum class kind : unsigned char { null, boolean, number, string, array, object };

  kind type = kind::null;
  bool boolean = false;
  // string: the decoded UTF-8 text; number: Python's repr() of the parsed int or float.
  std::string text;
  std::vector<json_value> items;     // array elements
  std::vector<json_member> members;  // object members in document order (keys are unique)

  bool is_null() const { return type == kind::null; }
  bool is_string() const { return type == kind::string; }
  bool is_object() const { return type == kind::object; }
  bool is_array() const { return type == kind::array; }

  // The member named `key`, or nullptr (objects only).
  const json_value* find(std::string_view key) const;
  json_value* find(std::string_view key);
};

struct json_member {
  std::string key;
  json_value value;
};

inline const json_value* json_value::find(std::string_view key) const {
  for (const auto& member : members)
    if (member.key == key) return &member.value;
  return nullptr;
}

inline json_value* json_value::find(std::string_view key) {
  for (auto& member : members)
    if (member.key == key) return &member.value;
  return nullptr;
}

}  // namespace cua_s1
