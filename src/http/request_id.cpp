// Request ids: a random per-process tag and a counter, or the client's own id.
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

}  // namespace cua_s1
