// CRC-32 (the PNG / zlib polynomial), slicing-by-8; used to verify and to re-emit PNG chunk CRCs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cua_s1 {

// Continues a CRC: start with crc = 0; crc32_update(crc32_update(0, a), b) == crc of a||b.
uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t size);

}  // namespace cua_s1
