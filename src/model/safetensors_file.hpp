// A read-only memory-mapped .safetensors file and its strictly checked header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/outcome.hpp"
#include "model/model_weights.hpp"

namespace cua_s1 {

inline constexpr uint64_t max_safetensors_header_bytes = 100ull << 20;  // 100 MiB

// One tensor entry of a safetensors header; offsets are relative to the data section.
struct safetensors_tensor {
  std::string name;
  tensor_view::dtype type = tensor_view::dtype::bf16;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;

  int64_t elements() const;
};

struct safetensors_header {
  uint64_t data_offset = 0;  // 8 + header length: where the data section starts in the file
  std::map<std::string, std::string> metadata;        // "__metadata__"
  std::map<std::string, safetensors_tensor> tensors;  // by name
};

// Parses and checks the header of a whole safetensors file held in `file_bytes`: the 8-byte
// little-endian length (not 0, at most 100 MiB, within the file), a JSON object without duplicate
// keys, an optional "__metadata__" object of strings, and per tensor exactly {dtype (BF16 or
// F32), shape, data_offsets} with offsets inside the data section, matching the byte count,
// aligned to the element size and not overlapping. Errors (status 500) name `file_name` and the
// tensor.
outcome<safetensors_header> parse_safetensors_header(std::span<const std::byte> file_bytes,
                                                     std::string_view file_name);

// A safetensors file mapped read-only; copies share the mapping.
class safetensors_file {
 public:
  static outcome<safetensors_file> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const safetensors_header& header() const { return header_; }
  const std::map<std::string, safetensors_tensor>& tensors() const { return header_.tensors; }
  const safetensors_tensor* find(const std::string& name) const;
  // A view of `tensor` (an entry of this file's header) into the mapping.
  tensor_view view(const safetensors_tensor& tensor) const;
  // The mapping: keep it alive while views into it are used.
  std::shared_ptr<const void> mapping() const { return mapping_; }

 private:
  std::filesystem::path path_;
  std::shared_ptr<const void> mapping_;
  std::span<const std::byte> bytes_;
  safetensors_header header_;
};

}  // namespace cua_s1
