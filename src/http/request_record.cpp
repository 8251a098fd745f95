// The metrics count and the log line of a finished request.
#include "http/request_record.hpp"

#include <vector>

#include "common/json_log.hpp"

namespace cua_s1 {

void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    const request_log_details& details) {
  metrics.count_request(std::string(route), status);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const log_level level = status >= 500 ? log_level::warning : log_level::info;
  std::vector<log_field> fields{{"request_id", request_id}, {"route", route}, {"status", status}};
  if (details.sequence)
    fields.emplace_back("sequence", static_cast<int64_t>(*details.sequence));
  if (!details.trace_id.empty()) fields.emplace_back("trace_id", details.trace_id);
  if (details.pass > 0) fields.emplace_back("pass", static_cast<int64_t>(details.pass));
  fields.emplace_back("ms", ms);
  log_event(level, "request", fields);
}

}  // namespace cua_s1
