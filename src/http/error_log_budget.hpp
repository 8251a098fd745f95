// Rate-limits the "request" log lines of one connection's failed requests, so that a client
// repeating a bad message cannot fill the log: a few lines a minute, the rest only counted.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace cua_s1 {

class error_log_budget {
 public:
  static constexpr size_t lines_per_window = 10;
  static constexpr std::chrono::seconds window{60};

  // `connection_id` and `route` name the connection in the summary line.
  error_log_budget(std::string connection_id, std::string route);
  ~error_log_budget();  // flush()
  error_log_budget(const error_log_budget&) = delete;
  error_log_budget& operator=(const error_log_budget&) = delete;

  // Whether the line of one more failure (answered `status`) may be written: the first
  // lines_per_window of each window may; the others are counted for the summary.
  bool admit(int status);
  // Logs how many lines were left out since the last summary ("request_lines_suppressed",
  // a warning when a 5xx was among them), if any.
  void flush();

 private:
  std::string connection_id_;
  std::string route_;
  std::chrono::steady_clock::time_point window_start_;
  size_t logged_in_window_ = 0;
  size_t suppressed_ = 0;
  bool suppressed_server_error_ = false;
};

}  // namespace cua_s1
