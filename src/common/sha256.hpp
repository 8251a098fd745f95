// SHA-256 digests (OpenSSL libcrypto) as lowercase hex.
#pragma once

#include <cstddef>
#include <string>

namespace cua_s1 {

std::string sha256_hex(const void* data, size_t size);

}  // namespace cua_s1
