// safetensors: strict header parsing and a read-only POSIX mmap of the file.
#include "model/safetensors_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

namespace cua_s1 {
namespace json = boost::json;

namespace {

// A basic_parser handler that only reports duplicate keys in any object (boost::json::parse
// silently keeps the last one).
struct duplicate_key_handler {
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);

  std::vector<std::set<std::string>> objects;  // keys of every open object
  std::vector<bool> in_object;                 // per open container: object or array
  std::string key;
  std::string duplicate;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return in_object.push_back(false), true; }
  bool on_array_end(std::size_t, json::error_code&) { return in_object.pop_back(), true; }
  bool on_object_begin(json::error_code&) {
    in_object.push_back(true);
    objects.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    in_object.pop_back();
    objects.pop_back();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    key.append(s.data(), s.size());
    if (!objects.back().insert(key).second) {
      duplicate = key;
      ec = json::error::syntax;
      return false;
    }
    key.clear();
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(int64_t, json::string_view, json::error_code&) { return true; }
  bool on_uint64(uint64_t, json::string_view, json::error_code&) { return true; }
  bool on_double(double, json::string_view, json::error_code&) { return true; }
  bool on_bool(bool, json::error_code&) { return true; }
  bool on_null(json::error_code&) { return true; }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

// The first duplicate key of `text` (already known to be valid JSON), or "".
std::string find_duplicate_key(std::string_view text) {
  json::basic_parser<duplicate_key_handler> parser(json::parse_options{});
  json::error_code ec;
  parser.write_some(false, text.data(), text.size(), ec);
  return parser.handler().duplicate;
}

std::optional<uint64_t> non_negative(const json::value& value) {
  if (value.is_uint64()) return value.get_uint64();
  if (value.is_int64() && value.get_int64() >= 0) return uint64_t(value.get_int64());
  return std::nullopt;
}

size_t dtype_size(tensor_view::dtype type) { return type == tensor_view::dtype::f32 ? 4 : 2; }

}  // namespace

int64_t safetensors_tensor::elements() const {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

int64_t tensor_view::elements() const {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

outcome<safetensors_header> parse_safetensors_header(std::span<const std::byte> file_bytes,
                                                     std::string_view file_name) {
  const std::string file(file_name);
  auto fail = [&](const std::string& problem) -> failure {
    return failure{500, "safetensors file " + file + ": " + problem};
  };
  if (file_bytes.size() < 8)
    return fail("is " + std::to_string(file_bytes.size()) + " bytes, too short for a header");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i)
    header_length = (header_length << 8) | std::to_integer<uint64_t>(file_bytes[size_t(i)]);
  const uint64_t available = file_bytes.size() - 8;
  if (header_length == 0) return fail("the header length is 0");
  if (header_length > max_safetensors_header_bytes)
    return fail("the header length " + std::to_string(header_length) + " exceeds " +
                std::to_string(max_safetensors_header_bytes) + " bytes");
  if (header_length > available)
    return fail("the header length " + std::to_string(header_length) + " exceeds the " +
                std::to_string(available) + " bytes after the length field");

  const std::string_view text(reinterpret_cast<const char*>(file_bytes.data()) + 8,
                              size_t(header_length));
  json::error_code ec;
  json::value root = json::parse(text, ec);
  if (ec) return fail("the header is not valid JSON (" + ec.message() + ")");
  if (!root.is_object()) return fail("the header is not a JSON object");
  if (std::string duplicate = find_duplicate_key(text); !duplicate.empty())
    return fail("the header has the key \"" + duplicate + "\" more than once");

  safetensors_header header;
  header.data_offset = 8 + header_length;
  const uint64_t data_size = available - header_length;
  for (const auto& [key, value] : root.get_object()) {
    const std::string name(key);
    if (name == "__metadata__") {
      if (!value.is_object()) return fail("__metadata__ is not an object");
      for (const auto& [meta_key, meta_value] : value.get_object()) {
        if (!meta_value.is_string())
          return fail("__metadata__ entry \"" + std::string(meta_key) + "\" is not a string");
        header.metadata.emplace(std::string(meta_key), std::string(meta_value.get_string()));
      }
      continue;
    }
    const std::string where = "tensor \"" + name + "\"";
    if (!value.is_object()) return fail(where + " is not an object");
    const json::object& entry = value.get_object();
    if (entry.size() != 3 || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      return fail(where + " must have exactly the keys dtype, shape and data_offsets");
    safetensors_tensor tensor;
    tensor.name = name;

    const json::value& dtype = entry.at("dtype");
    if (!dtype.is_string()) return fail(where + " has a dtype that is not a string");
    if (dtype.get_string() == "BF16") {
      tensor.type = tensor_view::dtype::bf16;
    } else if (dtype.get_string() == "F32") {
      tensor.type = tensor_view::dtype::f32;
    } else {
      return fail(where + " has dtype " + std::string(dtype.get_string()) +
                  "; only BF16 and F32 are supported");
    }

    const json::value& shape = entry.at("shape");
    if (!shape.is_array()) return fail(where + " has a shape that is not an array");
    // Every partial product stays below INT64_MAX / 4, so elements() and byte counts cannot
    // overflow whatever the order of the extents.
    const uint64_t element_bytes = dtype_size(tensor.type);
    const uint64_t limit = uint64_t(INT64_MAX) / 4;
    uint64_t elements = 1;
    bool overflow = false;
    for (const json::value& extent : shape.get_array()) {
      const auto n = non_negative(extent);
      if (!n || *n > uint64_t(INT64_MAX))
        return fail(where + " has a shape entry that is not a non-negative integer");
      tensor.shape.push_back(int64_t(*n));
      if (*n > limit || (*n != 0 && elements > limit / *n)) overflow = true;
      elements *= overflow ? 1 : *n;
    }
    if (overflow) return fail(where + " has a shape whose size overflows");

    const json::value& offsets = entry.at("data_offsets");
    if (!offsets.is_array() || offsets.get_array().size() != 2)
      return fail(where + " has data_offsets that are not [begin, end]");
    const auto begin = non_negative(offsets.get_array()[0]);
    const auto end = non_negative(offsets.get_array()[1]);
    if (!begin || !end) return fail(where + " has data_offsets that are not non-negative integers");
    if (*begin > *end)
      return fail(where + " has data_offsets [" + std::to_string(*begin) + ", " +
                  std::to_string(*end) + "] with begin after end");
    if (*end > data_size)
      return fail(where + " ends at " + std::to_string(*end) + ", beyond the " +
                  std::to_string(data_size) + "-byte data section");
    if (*end - *begin != elements * element_bytes)
      return fail(where + " spans " + std::to_string(*end - *begin) + " bytes but its shape and " +
                  "dtype need " + std::to_string(elements * element_bytes));
    if ((header.data_offset + *begin) % element_bytes != 0)
      return fail(where + " is not aligned to its " + std::to_string(element_bytes) +
                  "-byte elements");
    tensor.begin = *begin;
    tensor.end = *end;
    header.tensors.emplace(name, std::move(tensor));
  }

  // No two tensors may share bytes.
  std::vector<const safetensors_tensor*> by_offset;
  for (const auto& [name, tensor] : header.tensors)
    if (tensor.end > tensor.begin) by_offset.push_back(&tensor);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      return fail("tensors \"" + by_offset[i - 1]->name + "\" and \"" + by_offset[i]->name +
                  "\" overlap");
  return header;
}

outcome<safetensors_file> safetensors_file::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure{500, "cannot open " + file + ": " + std::strerror(errno)};
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return failure{500, "safetensors file " + file + " is not a regular file"};
  }
  const auto size = static_cast<size_t>(info.st_size);
  if (size < 8) {
    ::close(fd);
    return failure{500, "safetensors file " + file + ": is " + std::to_string(size) +
                            " bytes, too short for a header"};
  }
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (address == MAP_FAILED)
    return failure{500, "cannot map " + file + ": " + std::strerror(map_errno)};
  std::shared_ptr<const void> mapping(
      address, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });

  safetensors_file out;
  out.path_ = path;
  out.mapping_ = std::move(mapping);
  out.bytes_ = std::span<const std::byte>(static_cast<const std::byte*>(address), size);
  auto header = parse_safetensors_header(out.bytes_, file);
  if (!header) return header.error();
  out.header_ = std::move(*header);
  return out;
}

const safetensors_tensor* safetensors_file::find(const std::string& name) const {
  auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

tensor_view safetensors_file::view(const safetensors_tensor& tensor) const {
  tensor_view out;
  out.data = bytes_.data() + header_.data_offset + tensor.begin;
  out.type = tensor.type;
  out.shape = tensor.shape;
  return out;
}

}  // namespace cua_s1
