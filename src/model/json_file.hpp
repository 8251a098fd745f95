// Reading a model-side JSON file (config, index, adapter config, lock) whose top level is an object.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <string>

#include "common/outcome.hpp"

namespace cua_s1 {

// The parsed top-level object of `path`, or a 500 failure naming the file: "cannot read the
// <what> <file>", "<file>: invalid JSON (...)" or "<file>: the top level must be an object".
outcome<boost::json::object> read_json_object_file(const std::filesystem::path& path,
                                                   const std::string& what);

}  // namespace cua_s1
