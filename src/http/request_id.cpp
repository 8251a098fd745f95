// Request ids: a random per-process tag and a counter, or the client's own id (with the
// WebSocket message's sequence number appended).
#include "http/request_id.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace cua_s1 {

std::string request_id_for(std::string_view given) {
  bool usable = !given.empty() && given.size() <= 128;
  for (char c : given) usable = usable && c >= 0x20 && c <= 0x7E;
  if (usable) return std::string(given);
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_tag =
      std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  char id[40];
  std::snprintf(id, sizeof id, "%016llx-%08llx", static_cast<unsigned long long>(process_tag),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return id;
}

std::string message_request_id(const std::string& upgrade_id, uint64_t sequence) {
  if (upgrade_id.empty()) return request_id_for({});
  std::string suffix(1, '/');
  suffix += std::to_string(sequence);
  return upgrade_id.substr(0, 128 - suffix.size()) + suffix;
}

}  // namespace cua_s1
