// JSON-lines logging on stderr: one object per line with time, level, event and fields.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace cua_s1 {

// A field value: text (escaped), an integer, a number or a flag.
using log_value = std::variant<std::string_view, std::string, int64_t, double, bool>;

struct log_field {
  std::string_view key;
  log_value value;
  log_field(std::string_view k, std::string_view v) : key(k), value(v) {}
  log_field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  log_field(std::string_view k, std::string v) : key(k), value(std::move(v)) {}
  log_field(std::string_view k, int64_t v) : key(k), value(v) {}
  log_field(std::string_view k, int v) : key(k), value(int64_t{v}) {}
  log_field(std::string_view k, size_t v) : key(k), value(static_cast<int64_t>(v)) {}
  log_field(std::string_view k, double v) : key(k), value(v) {}
  log_field(std::string_view k, bool v) : key(k), value(v) {}
};

enum class log_level { debug, info, warning, error };

// Writes {"ts":"2026-12-02T18:56:36.123Z","level":"info","event":EVENT,...fields} and a newline
// to stderr in one write, so lines from different threads never interleave.
void log_event(log_level level, std::string_view event, std::initializer_list<log_field> fields = {});
// The same with fields gathered at run time (some present only sometimes).
void log_event(log_level level, std::string_view event, std::span<const log_field> fields);

// Messages below this level are dropped (default: info).
void set_log_level(log_level level);

}  // namespace cua_s1
