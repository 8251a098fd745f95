// Big/little-endian integer reads from byte spans, for the PNG and JPEG header parsers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cua_s1 {

inline uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint16_t read_be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t read_le32(const uint8_t* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | p[0];
}
inline uint16_t read_le16(const uint8_t* p) { return static_cast<uint16_t>((p[1] << 8) | p[0]); }

}  // namespace cua_s1
