// multipart/form-data as RFC 7578 and RFC 2046 section 5.1.1 frame it, read strictly: what the
// SDK's _core/multipart.py, httpx, curl -F and browsers write is accepted, anything else is 400.
#include "api/multipart_form.hpp"

#include <cctype>
#include <optional>

namespace cua_s1 {
namespace {

constexpr size_t max_part_header_lines = 16;
constexpr size_t max_part_header_line = 1024;
constexpr size_t max_header_parameters = 16;  // of one header value; more is malformed

failure malformed(std::string what) { return bad_request("malformed multipart body: " + what); }
failure too_large(std::string what) { return {413, "multipart body exceeds " + what}; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// RFC 9110 tchar: the characters of a header name or parameter name.
bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!is_token_char(c)) return false;
  return true;
}

// RFC 2046 bchars.
bool is_boundary_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// The `; name=value` parameters after a header value's first item, names lower-cased; values are
// tokens or quoted strings (with quoted-pairs). nullopt when malformed, a name repeats or there
// are more than max_header_parameters (the repeat check is quadratic in their number).
std::optional<std::vector<std::pair<std::string, std::string>>> header_parameters(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> parameters;
  while (true) {
    text = trim(text);
    if (text.empty()) return parameters;
    if (text.front() != ';') return std::nullopt;
    text = trim(text.substr(1));
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) return std::nullopt;
    std::string name(trim(text.substr(0, equals)));
    if (!is_token(name)) return std::nullopt;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    text = trim(text.substr(equals + 1));
    std::string value;
    if (!text.empty() && text.front() == '"') {
      size_t i = 1;
      for (; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        value += text[i];
      }
      if (i == text.size()) return std::nullopt;  // no closing quote
      text.remove_prefix(i + 1);
    } else {
      size_t end = 0;
      while (end < text.size() && is_token_char(text[end])) ++end;
      value = std::string(text.substr(0, end));
      if (value.empty()) return std::nullopt;
      text.remove_prefix(end);
    }
    if (parameters.size() == max_header_parameters) return std::nullopt;
    for (const auto& seen : parameters)
      if (seen.first == name) return std::nullopt;
    parameters.emplace_back(std::move(name), std::move(value));
  }
}

// The part name of a Content-Disposition value: form-data with a non-empty name.
std::optional<std::string> form_data_name(std::string_view value) {
  const size_t semicolon = value.find(';');
  if (!iequals(trim(value.substr(0, semicolon)), "form-data") ||
      semicolon == std::string_view::npos)
    return std::nullopt;
  auto parameters = header_parameters(value.substr(semicolon));
  if (!parameters) return std::nullopt;
  for (auto& [name, text] : *parameters)
    if (name == "name" && !text.empty()) return std::move(text);
  return std::nullopt;
}

// A part's header block from `body` at `pos` (moved past its empty line) into `part`.
std::optional<failure> read_part_headers(std::string_view body, size_t& pos, form_part& part) {
  bool has_disposition = false;
  bool has_type = false;
  for (size_t lines = 0;; ++lines) {
    const size_t end = body.find("\r\n", pos);
    if (end == std::string_view::npos) return malformed("part headers do not end");
    const std::string_view line = body.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (lines == max_part_header_lines || line.size() > max_part_header_line)
      return malformed("part headers too large");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return malformed("bad part header line");
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
        return malformed("control character in a part header");
    if (iequals(name, "Content-Disposition")) {
      auto part_name = form_data_name(value);
      if (has_disposition || !part_name)
        return malformed("each part needs one Content-Disposition: form-data with a name");
      has_disposition = true;
      part.name = std::move(*part_name);
    } else if (iequals(name, "Content-Type")) {
      if (has_type) return malformed("a part has two Content-Type headers");
      has_type = true;
      part.content_type = std::string(value);
    } else if (iequals(name, "Content-Transfer-Encoding")) {
      // RFC 7578 4.7 deprecates it; an encoding that changes the bytes would be misread.
      if (!iequals(value, "binary") && !iequals(value, "8bit") && !iequals(value, "7bit"))
        return malformed("unsupported Content-Transfer-Encoding");
    }  // other headers carry nothing we use
  }
  if (!has_disposition)
    return malformed("each part needs one Content-Disposition: form-data with a name");
  return std::nullopt;
}

// Where the delimiter line that ends the content starting at `from` begins (its CRLF), and whether
// it is the close delimiter. A delimiter is CRLF "--" boundary followed by "--" or by optional
// spaces/tabs (transport padding) and CRLF; the same bytes followed by anything else are content.
struct delimiter_found {
  size_t at = std::string_view::npos;  // npos: none
  size_t next = 0;                     // the first byte after the delimiter line
  bool close = false;
};

delimiter_found find_delimiter(std::string_view body, std::string_view delimiter, size_t from) {
  delimiter_found found;
  for (size_t at = body.find(delimiter, from); at != std::string_view::npos;
       at = body.find(delimiter, at + 1)) {
    size_t after = at + delimiter.size();
    if (body.substr(after, 2) == "--") {
      found = {at, after + 2, true};
      return found;
    }
    while (after < body.size() && (body[after] == ' ' || body[after] == '\t')) ++after;
    if (body.substr(after, 2) == "\r\n") {
      found = {at, after + 2, false};
      return found;
    }
  }
  return found;
}

}  // namespace

const form_part* multipart_form::find(std::string_view name) const {
  for (const auto& part : parts)
    if (part.name == name) return &part;
  return nullptr;
}

outcome<std::string> multipart_boundary(std::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  if (semicolon == std::string_view::npos) return malformed("no boundary parameter");
  auto parameters = header_parameters(content_type.substr(semicolon));
  if (!parameters) return malformed("bad Content-Type parameters");
  for (auto& [name, value] : *parameters) {
    if (name != "boundary") continue;
    if (value.empty() || value.size() > 70 || value.back() == ' ')
      return malformed("the boundary must have 1 to 70 characters");
    for (char c : value)
      if (!is_boundary_char(c)) return malformed("bad character in the boundary");
    return std::move(value);
  }
  return malformed("no boundary parameter");
}

outcome<multipart_form> parse_multipart_form(std::string_view content_type, std::string_view body) {
  if (body.size() > max_form_bytes) return too_large("8 MiB");
  auto boundary = multipart_boundary(content_type);
  if (!boundary) return boundary.error();
  // The first delimiter opens the body (no preamble: no client we serve writes one); every later
  // one follows a CRLF that belongs to it, not to the content before.
  const std::string dash_boundary = "--" + *boundary;
  const std::string delimiter = "\r\n" + dash_boundary;
  if (body.substr(0, dash_boundary.size()) != dash_boundary)
    return malformed("the body does not start with the boundary");
  delimiter_found opening = find_delimiter(body, delimiter.substr(2), 0);
  if (opening.at != 0) return malformed("the body does not start with the boundary");

  multipart_form form;
  size_t pos = opening.next;
  bool closed = opening.close;
  while (!closed) {
    if (form.parts.size() == max_form_parts) return too_large("8 parts");
    form_part part;
    if (auto bad = read_part_headers(body, pos, part)) return *bad;
    const delimiter_found end = find_delimiter(body, delimiter, pos);
    if (end.at == std::string_view::npos) return malformed("no close delimiter");
    part.content = std::string(body.substr(pos, end.at - pos));
    // Parts are addressed by name, so two of one name would leave the request ambiguous; RFC 7578
    // allows it only for several files in one field, which this API never takes. A framing
    // error of the form, hence 400 like the others.
    if (form.find(part.name)) return malformed("two parts named \"" + part.name + "\"");
    form.parts.push_back(std::move(part));
    pos = end.next;
    closed = end.close;
  }
  const std::string_view epilogue = body.substr(pos);
  if (!epilogue.empty() && epilogue != "\r\n")
    return malformed("data after the close delimiter");
  return form;
}

}  // namespace cua_s1
