// Raising the soft limit on open files to the hard limit, logged.
#include "server/open_file_limit.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/json_log.hpp"

namespace cua_s1 {
namespace {

// Descriptors the server needs besides its connections (model files, log, epoll, threads).
constexpr rlim_t descriptors_besides_connections = 64;
// Linux refuses an unlimited RLIMIT_NOFILE; its default ceiling (fs.nr_open) is this.
constexpr rlim_t ceiling_when_unlimited = 1 << 20;

}  // namespace

void raise_open_file_limit(size_t max_connections) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log_event(log_level::warning, "open_file_limit", {{"error", std::strerror(errno)}});
    return;
  }
  const rlim_t before = limit.rlim_cur;
  const rlim_t target =
      limit.rlim_max == RLIM_INFINITY ? ceiling_when_unlimited : limit.rlim_max;
  std::string error;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < target) {
    rlimit raised{target, limit.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0)
      limit.rlim_cur = target;
    else
      error = std::strerror(errno);
  }
  const bool enough = limit.rlim_cur == RLIM_INFINITY ||
                      limit.rlim_cur >= max_connections + descriptors_besides_connections;
  auto as_number = [](rlim_t value) {
    return value == RLIM_INFINITY ? int64_t{-1} : static_cast<int64_t>(value);
  };
  log_event(enough && error.empty() ? log_level::info : log_level::warning, "open_file_limit",
            {{"soft", as_number(limit.rlim_cur)}, {"hard", as_number(limit.rlim_max)},
             {"raised_from", as_number(before)}, {"max_connections", max_connections},
             {"detail", !error.empty() ? "cannot raise the soft limit: " + error
                        : enough      ? std::string("enough for --max-connections")
                                      : std::string("below --max-connections: connections "
                                                    "beyond it wait while accept backs off")}});
}

}  // namespace cua_s1
