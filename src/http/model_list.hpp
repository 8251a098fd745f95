// The body of GET /v1/models: the one model this server answers for, in the System One shape
// {"models":[{"name","description","release_date"}]} (typesafe-sdk ModelMetadataList).
#pragma once

#include <string>

namespace cua_s1 {

// The release date listed for cua-s1-4b-0.2 (YYYY-MM-DD). The weights lock pins the adapter's
// revision (16818868b0cc) but no date; this is the value to correct should its model card
// give another.
inline constexpr const char* served_model_release_date = "2026-01-01";

// The list, its description naming the weights served (`weights_description`, as /health).
std::string model_list_body(const std::string& weights_description);

}  // namespace cua_s1
