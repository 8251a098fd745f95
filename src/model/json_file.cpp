// Reading a model-side JSON file whose top level is an object, with errors that name the file.
#include "model/json_file.hpp"

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

namespace cua_s1 {

outcome<boost::json::object> read_json_object_file(const std::filesystem::path& path,
                                                   const std::string& what) {
  const std::string file = path.string();
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return failure{500, "cannot read the " + what + " " + file};
  std::stringstream buffer;
  buffer << stream.rdbuf();
  boost::system::error_code ec;
  boost::json::value root = boost::json::parse(buffer.str(), ec);
  if (ec) return failure{500, file + ": invalid JSON (" + ec.message() + ")"};
  if (!root.is_object()) return failure{500, file + ": the top level must be an object"};
  return std::move(root.get_object());
}

}  // namespace cua_s1
