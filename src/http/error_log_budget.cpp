// The per-connection budget of log lines for failed requests.
#include "http/error_log_budget.hpp"

#include "common/json_log.hpp"

namespace cua_s1 {

error_log_budget::error_log_budget(std::string connection_id, std::string route)
    : connection_id_(std::move(connection_id)),
      route_(std::move(route)),
      window_start_(std::chrono::steady_clock::now()) {}

error_log_budget::~error_log_budget() { flush(); }

bool error_log_budget::admit(int status) {
  const auto now = std::chrono::steady_clock::now();
  if (now - window_start_ >= window) {
    flush();
    window_start_ = now;
    logged_in_window_ = 0;
  }
  if (logged_in_window_ < lines_per_window) {
    ++logged_in_window_;
    return true;
  }
  ++suppressed_;
  suppressed_server_error_ = suppressed_server_error_ || status >= 500;
  return false;
}

void error_log_budget::flush() {
  if (suppressed_ == 0) return;
  log_event(suppressed_server_error_ ? log_level::warning : log_level::info,
            "request_lines_suppressed",
            {{"request_id", connection_id_},
             {"route", route_},
             {"failed_requests", suppressed_},
             {"window_s", static_cast<int64_t>(window.count())}});
  suppressed_ = 0;
  suppressed_server_error_ = false;
}

}  // namespace cua_s1
