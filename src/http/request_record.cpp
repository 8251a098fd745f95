// The metrics count and the log line of a finished request.
#include "http/request_record.hpp"

#include "common/json_log.hpp"

namespace cua_s1 {

void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    std::optional<uint64_t> sequence) {
  metrics.count_request(std::string(route), status);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const log_level level = status >= 500 ? log_level::warning : log_level::info;
  if (sequence)
    log_event(level, "request",
              {{"request_id", request_id}, {"route", route}, {"status", status},
               {"sequence", static_cast<int64_t>(*sequence)}, {"ms", ms}});
  else
    log_event(level, "request",
              {{"request_id", request_id}, {"route", route}, {"status", status}, {"ms", ms}});
}

}  // namespace cua_s1
