// libFuzzer target: gzip and zstd request bodies decoded with a bounded output. The input's first
// byte picks the coding (even: gzip, odd: zstd), the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/content_decoding.hpp"

namespace {
constexpr size_t max_output = 1024 * 1024;  // smaller than the server's 8 MiB: more runs a second
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto coding = data[0] % 2 == 0 ? cua_s1::content_coding::gzip : cua_s1::content_coding::zstd;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto decoded = cua_s1::decode_content(std::move(body), coding, max_output);
  if (!decoded) {
    const int status = decoded.error().status;
    if ((status != 400 && status != 413) || decoded.error().detail.empty()) __builtin_trap();
  } else if (decoded->size() > max_output) {
    __builtin_trap();
  }
  return 0;
}
