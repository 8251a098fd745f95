// The JSON-lines logger.
#include "common/json_log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/json_text.hpp"

namespace cua_s1 {
namespace {

std::atomic<int> minimum_level{static_cast<int>(log_level::info)};

const char* level_name(log_level level) {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
  }
  return "info";
}

void append_quoted(std::string& out, std::string_view text) {
  out.push_back('"');
  append_json_string_body(out, text);
  out.push_back('"');
}

}  // namespace

void set_log_level(log_level level) { minimum_level = static_cast<int>(level); }

void log_event(log_level level, std::string_view event, std::initializer_list<log_field> fields) {
  log_event(level, event, std::span<const log_field>(fields.begin(), fields.size()));
}

void log_event(log_level level, std::string_view event, std::span<const log_field> fields) {
  if (static_cast<int>(level) < minimum_level.load(std::memory_order_relaxed)) return;
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[96];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis.count()));
  std::string line = "{\"ts\":\"";
  line += stamp;
  line += "\",\"level\":\"";
  line += level_name(level);
  line += "\",\"event\":";
  append_quoted(line, event);
  for (const auto& field : fields) {
    line.push_back(',');
    append_quoted(line, field.key);
    line.push_back(':');
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            line += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, int64_t>) {
            line += std::to_string(v);
          } else if constexpr (std::is_same_v<T, double>) {
            line += std::isfinite(v) ? python_float_repr(v) : "null";
          } else {
            append_quoted(line, v);
          }
        },
        field.value);
  }
  line += "}\n";
  // One write(2) per line keeps concurrent lines whole.
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n <= 0) break;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace cua_s1
