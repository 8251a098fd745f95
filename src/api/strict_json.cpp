// Recursive-descent JSON parser mirroring CPython's json.loads (C scanner, strict=True) plus
// the reference's duplicate-key, non-finite and re-serialization checks.
#include "api/strict_json.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <string>
#include <unordered_set>

#include "api/python_json.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

constexpr const char* generic_message = "request body must contain valid JSON and UTF-8 text";
constexpr size_t max_int_digits = 4300;  // CPython's int/str conversion limit

// The end of the run of bytes that a JSON string keeps as they are (anything but '"', '\\' and
// control characters) from p, looking at eight bytes at a time: the base64 image is one such run.
const char* skip_plain_string_bytes(const char* p, const char* end) {
  constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    const uint64_t quote = v ^ (ones * '"'), backslash = v ^ (ones * '\\');
    // (x - ones) & ~x & highs is non-zero exactly when some byte of x is 0, and
    // (v - 0x20 * ones) & ~v & highs exactly when some byte of v is below 0x20.
    if ((((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((v - ones * 0x20) & ~v)) &
        highs)
      break;  // one of these eight is special: found byte by byte below
    p += 8;
  }
  while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  return p;
}

class parser {
 public:
  explicit parser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // Parses one complete document; `error_` is set on failure.
  bool parse_document(json_value& out) {
    skip_whitespace();
    if (!parse_value(out, 0)) return false;
    skip_whitespace();
    if (p_ != end_) return fail(generic_message);
    return true;
  }

  const std::string& error() const { return error_; }
  // Problems CPython only notices when the reference re-serializes the value.
  bool needs_reserialization_failure() const { return lone_surrogate_ || float_overflow_; }

 private:
  bool fail(const char* message) {
    if (error_.empty()) error_ = message;
    return false;
  }

  void skip_whitespace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool consume_literal(std::string_view literal) {
    if (static_cast<size_t>(end_ - p_) < literal.size()) return false;
    if (std::string_view(p_, literal.size()) != literal) return false;
    p_ += literal.size();
    return true;
  }

  bool parse_value(json_value& out, int depth) {
    if (p_ >= end_) return fail(generic_message);
    if (++values_ > max_json_values) return fail(generic_message);
    switch (*p_) {
      case '"':
        out.type = json_value::kind::string;
        return parse_string(out.text);
      case '{': return parse_object(out, depth + 1);
      case '[': return parse_array(out, depth + 1);
      case 'n':
        if (!consume_literal("null")) return fail(generic_message);
        out.type = json_value::kind::null;
        return true;
      case 't':
        if (!consume_literal("true")) return fail(generic_message);
        out.type = json_value::kind::boolean, out.boolean = true;
        return true;
      case 'f':
        if (!consume_literal("false")) return fail(generic_message);
        out.type = json_value::kind::boolean, out.boolean = false;
        return true;
      case 'N':
        if (consume_literal("NaN")) return fail("non-finite JSON numbers are not supported");
        return fail(generic_message);
      case 'I':
        if (consume_literal("Infinity")) return fail("non-finite JSON numbers are not supported");
        return fail(generic_message);
      default:
        if (consume_literal("-Infinity"))
          return fail("non-finite JSON numbers are not supported");
        return parse_number(out);
    }
  }

  bool parse_object(json_value& out, int depth) {
    if (depth > max_json_depth) return fail(generic_message);
    ++p_;  // '{'
    out.type = json_value::kind::object;
    skip_whitespace();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    while (true) {
      if (p_ >= end_ || *p_ != '"') return fail(generic_message);
      json_member member;
      if (!parse_string(member.key)) return false;
      skip_whitespace();
      if (p_ >= end_ || *p_ != ':') return fail(generic_message);
      ++p_;
      skip_whitespace();
      if (!parse_value(member.value, depth)) return false;
      out.members.push_back(std::move(member));
      skip_whitespace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        skip_whitespace();
        continue;
      }
      if (p_ < end_ && *p_ == '}') {
        ++p_;
        break;
      }
      return fail(generic_message);
    }
    // The reference's object_pairs_hook sees the pairs once the object is closed.
    if (has_duplicate_keys(out)) return fail("duplicate JSON keys are not supported");
    return true;
  }

  static bool has_duplicate_keys(const json_value& object) {
    const auto& members = object.members;
    if (members.size() <= 16) {
      for (size_t i = 1; i < members.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (members[i].key == members[j].key) return true;
      return false;
    }
    std::unordered_set<std::string_view> seen;
    seen.reserve(members.size() * 2);
    for (const auto& member : members)
      if (!seen.insert(member.key).second) return true;
    return false;
  }

  bool parse_array(json_value& out, int depth) {
    if (depth > max_json_depth) return fail(generic_message);
    ++p_;  // '['
    out.type = json_value::kind::array;
    skip_whitespace();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    while (true) {
      out.items.emplace_back();
      if (!parse_value(out.items.back(), depth)) return false;
      skip_whitespace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        skip_whitespace();
        continue;
      }
      if (p_ < end_ && *p_ == ']') {
        ++p_;
        return true;
      }
      return fail(generic_message);
    }
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool parse_hex4(uint32_t& value) {
    if (end_ - p_ < 4) return false;
    value = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hex_value(p_[i]);
      if (digit < 0) return false;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    p_ += 4;
    return true;
  }

  // Parses a string starting at '"'. The input is already known to be valid UTF-8.
  bool parse_string(std::string& out) {
    ++p_;  // opening quote
    while (true) {
      const char* run = p_;
      p_ = skip_plain_string_bytes(p_, end_);
      out.append(run, p_ - run);
      if (p_ >= end_) return fail(generic_message);
      char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return fail(generic_message);  // raw control character
      ++p_;
      if (p_ >= end_) return fail(generic_message);
      char escape = *p_++;
      switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t unit;
          if (!parse_hex4(unit)) return fail(generic_message);
          if (unit >= 0xD800 && unit <= 0xDBFF && end_ - p_ >= 6 && p_[0] == '\\' &&
              p_[1] == 'u') {
            const char* save = p_;
            p_ += 2;
            uint32_t low;
            if (parse_hex4(low) && low >= 0xDC00 && low <= 0xDFFF) {
              utf8::append(out, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
              break;
            }
            p_ = save;  // not a pair: the high surrogate stays alone, the escape is re-read
          }
          if (unit >= 0xD800 && unit <= 0xDFFF) {
            lone_surrogate_ = true;  // CPython keeps it; encoding to UTF-8 fails later
            out += "\xEF\xBF\xBD";
          } else {
            utf8::append(out, unit);
          }
          break;
        }
        default: return fail(generic_message);
      }
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  bool parse_number(json_value& out) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || !is_digit(*p_)) return fail(generic_message);
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    bool is_float = false;
    if (p_ + 1 < end_ && *p_ == '.' && is_digit(p_[1])) {
      is_float = true;
      p_ += 2;
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      const char* exponent = p_ + 1;
      if (exponent < end_ && (*exponent == '+' || *exponent == '-')) ++exponent;
      if (exponent < end_ && is_digit(*exponent)) {
        is_float = true;
        p_ = exponent;
        while (p_ < end_ && is_digit(*p_)) ++p_;
      }
    }
    std::string_view literal(start, p_ - start);
    out.type = json_value::kind::number;
    if (!is_float) {
      bool negative = literal[0] == '-';
      std::string_view digits = literal.substr(negative ? 1 : 0);
      if (digits.size() > max_int_digits) return fail(generic_message);
      out.text = (negative && digits != "0") ? std::string(literal) : std::string(digits);
      return true;
    }
    double value = 0;
    auto result = std::from_chars(literal.data(), literal.data() + literal.size(), value);
    if (result.ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow; CPython gives +-inf or +-0.0.
      bool underflow = false;
      size_t e = literal.find_first_of("eE");
      if (e != std::string_view::npos) {
        std::string_view exponent = literal.substr(e + 1);
        underflow = !exponent.empty() && exponent[0] == '-';
      }
      if (!underflow) {
        float_overflow_ = true;
        out.text = "inf";
        return true;
      }
      value = literal[0] == '-' ? -0.0 : 0.0;
    } else if (result.ec != std::errc()) {
      return fail(generic_message);
    }
    if (!std::isfinite(value)) float_overflow_ = true;
    out.text = python_float_repr(value);
    return true;
  }

  const char* p_;
  const char* end_;
  std::string error_;
  size_t values_ = 0;  // values parsed so far (max_json_values)
  bool lone_surrogate_ = false;
  bool float_overflow_ = false;
};

}  // namespace

outcome<json_value> parse_strict_json(std::string_view body) {
  if (!utf8::is_valid(body)) return bad_request(generic_message);
  // A leading U+FEFF (UTF-8 BOM) is not JSON whitespace: CPython rejects it.
  parser p(body);
  json_value value;
  if (!p.parse_document(value)) return bad_request(p.error());
  if (p.needs_reserialization_failure()) return bad_request(generic_message);
  if (!value.is_object()) return bad_request("request must be a JSON object");
  return value;
}

}  // namespace cua_s1
