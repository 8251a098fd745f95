// libFuzzer target: strict JSON decoding and contract validation of request bodies.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/request_validation.hpp"
#include "api/strict_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = cua_s1::parse_strict_json(body);
  if (!parsed) {
    if (parsed.error().status != 400 || parsed.error().detail.empty()) __builtin_trap();
    return 0;
  }
  auto request = cua_s1::validate_request(std::move(*parsed));
  if (!request && (request.error().status != 422 || request.error().detail.empty())) __builtin_trap();
  return 0;
}
