// The metrics count and the log line of a finished request.
#include "http/request_record.hpp"

#include <vector>

#include "common/json_log.hpp"

namespace cua_s1 {

void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    std::optional<uint64_t> sequence, uint64_t pass) {
  metrics.count_request(std::string(route), status);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const log_level level = status >= 500 ? log_level::warning : log_level::info;
  std::vector<log_field> fields{{"request_id", request_id}, {"route", route}, {"status", status}};
  if (sequence) fields.emplace_back("sequence", static_cast<int64_t>(*sequence));
  if (pass > 0) fields.emplace_back("pass", static_cast<int64_t>(pass));
  fields.emplace_back("ms", ms);
  log_event(level, "request", fields);
}

}  // namespace cua_s1
