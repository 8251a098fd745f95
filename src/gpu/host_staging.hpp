// Pinned host memory for the uploads of one run: copies from pinned memory are truly
// asynchronous (a pageable copy waits for the stream to drain first), so a whole request can be
// enqueued without blocking. Blocks are kept and reused; reset() when the last run finished.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace cua_s1::gpu {

class host_staging {
 public:
  host_staging() = default;
  ~host_staging();
  host_staging(const host_staging&) = delete;
  host_staging& operator=(const host_staging&) = delete;

  // A pinned copy of `count` values, valid until reset().
  template <class T>
  const T* stage(const T* data, size_t count) {
    void* target = take(count * sizeof(T));
    if (count) std::memcpy(target, data, count * sizeof(T));
    return static_cast<const T*>(target);
  }

  // Uninitialised pinned space for `count` values (e.g. a device-to-host result).
  template <class T>
  T* reserve(size_t count) {
    return static_cast<T*>(take(count * sizeof(T)));
  }

  // Makes all space reusable; only when no copy from or to it is pending.
  void reset();

 private:
  void* take(size_t bytes);

  struct block {
    char* data = nullptr;
    size_t size = 0, used = 0;
  };
  std::vector<block> blocks_;
  size_t current_ = 0;
};

}  // namespace cua_s1::gpu
