// json.dumps layout over the shared string and float text (common/json_text.hpp).
#include "api/python_json.hpp"

namespace cua_s1 {
namespace {

void dump(std::string& out, const json_value& value) {
  switch (value.type) {
    case json_value::kind::null: out += "null"; break;
    case json_value::kind::boolean: out += value.boolean ? "true" : "false"; break;
    case json_value::kind::number: out += value.text; break;
    case json_value::kind::string:
      out.push_back('"');
      append_json_string_body(out, value.text);
      out.push_back('"');
      break;
    case json_value::kind::array:
      out.push_back('[');
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i) out += ", ";
        dump(out, value.items[i]);
      }
      out.push_back(']');
      break;
    case json_value::kind::object:
      out.push_back('{');
      for (size_t i = 0; i < value.members.size(); ++i) {
        if (i) out += ", ";
        out.push_back('"');
        append_json_string_body(out, value.members[i].key);
        out += "\": ";
        dump(out, value.members[i].value);
      }
      out.push_back('}');
      break;
  }
}

}  // namespace

std::string python_json_dumps(const json_value& value) {
  std::string out;
  dump(out, value);
  return out;
}

}  // namespace cua_s1
