// API keys from options, variables and files, checked without ever echoing a key.
#include "server/api_key_sources.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cua_s1 {
namespace {

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

}  // namespace

std::optional<std::string> api_key_problem(std::string_view key) {
  if (key.empty()) return "is empty";
  for (char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7F)
      return "has a whitespace, control or non-ASCII character (keys are printable ASCII)";
  }
  return std::nullopt;
}

outcome<std::vector<std::string>> split_api_keys(std::string_view list) {
  std::vector<std::string> keys;
  size_t start = 0;
  for (size_t index = 1;; ++index) {
    const size_t comma = list.find(',', start);
    const std::string_view key = list.substr(start, comma - start);
    if (auto problem = api_key_problem(key))
      return failure{2, "key " + std::to_string(index) + " " + *problem};
    keys.emplace_back(key);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return keys;
}

outcome<std::vector<std::string>> read_api_key_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return failure{2, "cannot read the API key file " + path + ": " + std::strerror(errno)};
  std::vector<std::string> keys;
  std::string line;
  for (size_t number = 1; std::getline(file, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (blank(line)) continue;
    if (auto problem = api_key_problem(line))
      return failure{2, "the API key file " + path + ": line " + std::to_string(number) + " " +
                            *problem};
    keys.push_back(std::move(line));
  }
  if (file.bad()) return failure{2, "cannot read the API key file " + path};
  if (keys.empty()) return failure{2, "the API key file " + path + " holds no key"};
  return keys;
}

}  // namespace cua_s1
