// config.json / preprocessor_config.json reading with field-level error messages.
#include "prep/processor_files.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

namespace cua_s1 {
namespace {

namespace json = boost::json;

failure file_error(const std::filesystem::path& file, const std::string& what) {
  return {500, file.string() + ": " + what};
}

outcome<json::object> read_json_object(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return file_error(file, "cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  boost::system::error_code ec;
  json::value value = json::parse(buffer.str(), ec);
  if (ec) return file_error(file, "invalid JSON: " + ec.message());
  if (!value.is_object()) return file_error(file, "is not a JSON object");
  return value.as_object();
}

// An integer field; `fallback` < 0 means the field is required.
outcome<int64_t> integer_field(const json::object& object, const std::filesystem::path& file,
                               const char* name, int64_t fallback = -1) {
  const json::value* value = object.if_contains(name);
  if (!value) {
    if (fallback >= 0) return fallback;
    return file_error(file, std::string("missing integer field ") + name);
  }
  if (value->is_int64()) return value->as_int64();
  if (value->is_uint64()) return static_cast<int64_t>(value->as_uint64());
  return file_error(file, std::string(name) + " must be an integer");
}

outcome<bool> flag_field(const json::object& object, const char* name, bool fallback) {
  const json::value* value = object.if_contains(name);
  if (!value) return fallback;
  if (!value->is_bool()) return failure{500, std::string(name) + " must be a boolean"};
  return value->as_bool();
}

}  // namespace

outcome<processor_files> read_processor_files(const std::filesystem::path& model_dir) {
  processor_files files;
  const auto config_path = model_dir / "config.json";
  auto config = read_json_object(config_path);
  if (!config) return config.error();
  auto image_token = integer_field(*config, config_path, "image_token_id");
  if (!image_token) return image_token.error();
  auto vision_start = integer_field(*config, config_path, "vision_start_token_id");
  if (!vision_start) return vision_start.error();
  files.image_token_id = static_cast<int32_t>(*image_token);
  files.vision_start_token_id = static_cast<int32_t>(*vision_start);

  const auto prep_path = model_dir / "preprocessor_config.json";
  auto prep = read_json_object(prep_path);
  if (!prep) return prep.error();
  processor_config& image = files.image;
  auto patch = integer_field(*prep, prep_path, "patch_size", image.patch_size);
  auto merge = integer_field(*prep, prep_path, "merge_size", image.merge_size);
  auto temporal = integer_field(*prep, prep_path, "temporal_patch_size", image.temporal_patch_size);
  for (auto* field : {&patch, &merge, &temporal})
    if (!*field) return field->error();
  if (*patch != 16 || *merge != 2 || *temporal != 2)
    return file_error(prep_path, "only patch_size 16, merge_size 2, temporal_patch_size 2 are "
                                 "supported (the model's vision tower is built for them)");
  if (const json::value* size = prep->if_contains("size")) {
    if (!size->is_object()) return file_error(prep_path, "size must be an object");
    auto shortest = integer_field(size->as_object(), prep_path, "shortest_edge", image.min_pixels);
    auto longest = integer_field(size->as_object(), prep_path, "longest_edge", image.max_pixels);
    if (!shortest) return shortest.error();
    if (!longest) return longest.error();
    image.min_pixels = static_cast<uint64_t>(*shortest);
    image.max_pixels = static_cast<uint64_t>(*longest);
  }
  if (image.min_pixels == 0 || image.min_pixels > image.max_pixels)
    return file_error(prep_path, "size.shortest_edge must be positive and <= size.longest_edge");
  for (const char* name : {"image_mean", "image_std"}) {
    const json::value* value = prep->if_contains(name);
    if (!value) continue;
    const json::array* values = value->if_array();
    if (!values || values->size() != 3)
      return file_error(prep_path, std::string(name) + " must be an array of 3 numbers");
    auto& target = std::string_view(name) == "image_mean" ? image.image_mean : image.image_std;
    for (size_t c = 0; c < 3; ++c) {
      if (!(*values)[c].is_number())
        return file_error(prep_path, std::string(name) + " must be an array of 3 numbers");
      target[c] = static_cast<float>((*values)[c].to_number<double>());
    }
  }
  if (image.image_mean != std::array<float, 3>{0.5f, 0.5f, 0.5f} ||
      image.image_std != std::array<float, 3>{0.5f, 0.5f, 0.5f})
    return file_error(prep_path, "only image_mean = image_std = 0.5 is supported");
  for (const char* name : {"do_resize", "do_rescale", "do_normalize", "do_convert_rgb"}) {
    auto flag = flag_field(*prep, name, true);
    if (!flag) return file_error(prep_path, flag.error().detail);
    if (!*flag) return file_error(prep_path, std::string(name) + " = false is not supported");
  }
  if (const json::value* factor = prep->if_contains("rescale_factor")) {
    if (!factor->is_number() || std::fabs(factor->to_number<double>() - 1.0 / 255.0) > 1e-12)
      return file_error(prep_path, "only rescale_factor 1/255 is supported");
  }

  files.tokenizer_json = model_dir / "tokenizer.json";
  if (!std::filesystem::is_regular_file(files.tokenizer_json))
    return file_error(files.tokenizer_json, "is missing");
  return files;
}

}  // namespace cua_s1
