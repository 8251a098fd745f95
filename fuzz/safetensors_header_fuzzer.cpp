// libFuzzer target: the safetensors header parser (a 500 or a header whose tensors lie inside the
// buffer, aligned and disjoint; never a crash).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/safetensors_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto header = cua_s1::parse_safetensors_header(bytes, "fuzz.safetensors");
  if (!header) {
    if (header.error().status != 500 || header.error().detail.empty()) __builtin_trap();
    return 0;
  }
  if (header->data_offset < 9 || header->data_offset > size) __builtin_trap();
  const uint64_t data_size = size - header->data_offset;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, tensor] : header->tensors) {
    const uint64_t element = tensor.type == cua_s1::tensor_view::dtype::f32 ? 4 : 2;
    if (tensor.begin > tensor.end || tensor.end > data_size) __builtin_trap();
    if (tensor.end - tensor.begin != uint64_t(tensor.elements()) * element) __builtin_trap();
    if ((header->data_offset + tensor.begin) % element != 0) __builtin_trap();
    if (tensor.end > tensor.begin) ranges.emplace_back(tensor.begin, tensor.end);
    // Touch the tensor's first and last byte as a loader would.
    if (tensor.end > tensor.begin) {
      volatile uint8_t first = data[header->data_offset + tensor.begin];
      volatile uint8_t last = data[header->data_offset + tensor.end - 1];
      (void)first;
      (void)last;
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) __builtin_trap();
  return 0;
}
