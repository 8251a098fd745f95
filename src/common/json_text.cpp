// JSON string escaping and Python's float repr.
#include "common/json_text.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace cua_s1 {

void append_json_string_body(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
  }
  out.append(text.data() + run_start, text.size() - run_start);
}

std::string python_float_repr(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string_view sci(buffer, result.ptr - buffer);  // e.g. "-1.5e-05"
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits.push_back(c);
  int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  int decimal_point = exponent + 1;  // value = 0.digits * 10^decimal_point
  int digit_count = static_cast<int>(digits.size());
  if (decimal_point <= -4 || decimal_point > 16) {
    out.push_back(digits[0]);
    if (digit_count > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    out.push_back(exponent < 0 ? '-' : '+');
    int magnitude = std::abs(exponent);
    if (magnitude < 10) out.push_back('0');
    out += std::to_string(magnitude);
  } else if (decimal_point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decimal_point), '0');
    out += digits;
  } else if (decimal_point < digit_count) {
    out.append(digits, 0, decimal_point);
    out.push_back('.');
    out.append(digits, decimal_point);
  } else {
    out += digits;
    out.append(static_cast<size_t>(decimal_point - digit_count), '0');
    out += ".0";
  }
  return out;
}

}  // namespace cua_s1
