// Picture memory (codec/picture_memory.hpp) from reused pinned host blocks: the CUDA backend
// uploads a picture decoded into one straight from it, without a staging copy, and a reused
// block's pages are mapped and warm when the next picture is decoded into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "codec/picture_memory.hpp"

namespace cua_s1::gpu {

class pinned_pictures final : public picture_memory {
 public:
  // The process's pool (never destroyed: pictures may be freed until the process ends).
  static pinned_pictures& instance();

  // Pinned blocks kept at most, in use or idle; past it pictures come from the heap (logged).
  static constexpr size_t max_pinned_bytes = size_t(256) << 20;

  void* allocate(size_t bytes) override;
  void deallocate(void* pointer, size_t bytes) noexcept override;

  // Whether [pointer, pointer + bytes) lies inside one pinned block of the pool.
  bool pinned(const void* pointer, size_t bytes) const;

 private:
  pinned_pictures() = default;
  struct block {
    size_t size = 0;
    bool in_use = false;
  };
  mutable std::mutex mutex_;
  std::map<uintptr_t, block> blocks_;  // by start address
  size_t pinned_bytes_ = 0;
  bool reported_heap_ = false;
};

}  // namespace cua_s1::gpu
