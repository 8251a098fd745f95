// libFuzzer target: multipart/form-data framing and the asset forms behind it. The input's first
// line is the Content-Type value, the rest the body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/body_decoding.hpp"
#include "api/multipart_form.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view content_type = input.substr(0, newline);
  const std::string_view body = input.substr(newline + 1);

  auto form = cua_s1::parse_multipart_form(content_type, body);
  if (!form) {
    if (form.error().status != 400 && form.error().status != 413) __builtin_trap();
    if (form.error().detail.empty()) __builtin_trap();
  } else {
    if (form->parts.size() > cua_s1::max_form_parts) __builtin_trap();
    size_t content_bytes = 0;
    for (size_t i = 0; i < form->parts.size(); ++i) {
      const auto& part = form->parts[i];
      if (part.name.empty() || form->find(part.name) != &part) __builtin_trap();  // unique names
      if (body.find(part.content) == std::string_view::npos) __builtin_trap();
      content_bytes += part.content.size();
    }
    if (content_bytes > body.size()) __builtin_trap();
  }

  cua_s1::decision_body whole;
  whole.content_type = "multipart/form-data" + std::string(content_type.substr(
                           std::min(content_type.find(';'), content_type.size())));
  whole.bytes = std::string(body);
  auto request = cua_s1::decode_decision_body(std::move(whole));
  if (!request) {
    const int status = request.error().status;
    if (status != 400 && status != 413 && status != 422) __builtin_trap();
    if (request.error().detail.empty()) __builtin_trap();
  } else if (request->image_data_url.empty() || request->questions.empty()) {
    __builtin_trap();
  }
  return 0;
}
