// Validation of the W3C traceparent header (Trace Context level 1, section 3.2).
#include "http/trace_context.hpp"

namespace cua_s1 {
namespace {

constexpr size_t version_00_size = 55;  // "00-" 32 "-" 16 "-" 2

bool lower_hex(std::string_view text) {
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zeros(std::string_view text) { return text.find_first_not_of('0') == std::string_view::npos; }

}  // namespace

std::string valid_traceparent(std::string_view header) {
  if (header.size() < version_00_size) return {};
  const std::string_view version = header.substr(0, 2), trace_id = header.substr(3, 32),
                         parent_id = header.substr(36, 16), flags = header.substr(53, 2);
  const bool fields_ok = lower_hex(version) && version != "ff" && header[2] == '-' &&
                         lower_hex(trace_id) && !all_zeros(trace_id) && header[35] == '-' &&
                         lower_hex(parent_id) && !all_zeros(parent_id) && header[52] == '-' &&
                         lower_hex(flags);
  const bool length_ok = header.size() == version_00_size ||
                         (version != "00" && header[version_00_size] == '-');
  // A later version's further fields are not ours to repeat (and may be long): its first four
  // fields are what is kept, echoed and logged.
  return fields_ok && length_ok ? std::string(header.substr(0, version_00_size)) : std::string();
}

std::string_view trace_id_of(std::string_view traceparent) {
  return traceparent.size() >= version_00_size ? traceparent.substr(3, 32) : std::string_view();
}

}  // namespace cua_s1
