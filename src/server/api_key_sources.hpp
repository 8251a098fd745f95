// Where the server's API keys come from (--api-key, CUA_S1_API_KEY, --api-key-file) and what a
// usable key is. No message here ever contains a key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

// Why `key` cannot be a key (empty; whitespace, control or non-ASCII characters: it could not be
// sent in an Authorization header as typed), or nothing when it can.
std::optional<std::string> api_key_problem(std::string_view key);

// The keys of a comma-separated list (CUA_S1_API_KEY), each checked; a failure (status 2) says
// which entry is wrong by its position, never by its text.
outcome<std::vector<std::string>> split_api_keys(std::string_view list);

// The keys of a key file: one a line, blank lines ignored, a CR before the newline dropped. An
// unreadable file, one without a key or with an unusable line is a failure (status 2) naming the
// file and the line number.
outcome<std::vector<std::string>> read_api_key_file(const std::string& path);

}  // namespace cua_s1
