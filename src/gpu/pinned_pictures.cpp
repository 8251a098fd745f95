// The pinned picture pool: blocks of whole MiBs from cudaHostAlloc, the smallest idle one that
// fits reused, never returned to the driver (a cudaFreeHost would wait for the device).
#include "gpu/pinned_pictures.hpp"

#include <cuda_runtime.h>

#include <new>

#include "common/json_log.hpp"

namespace cua_s1::gpu {

pinned_pictures& pinned_pictures::instance() {
  static pinned_pictures* const pool = new pinned_pictures;  // intentionally never destroyed
  return *pool;
}

void* pinned_pictures::allocate(size_t bytes) {
  std::lock_guard lock(mutex_);
  auto best = blocks_.end();
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
    if (!it->second.in_use && it->second.size >= bytes &&
        (best == blocks_.end() || it->second.size < best->second.size))
      best = it;
  if (best != blocks_.end()) {
    best->second.in_use = true;
    return reinterpret_cast<void*>(best->first);
  }
  const size_t size = (bytes + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
  void* fresh = nullptr;
  if (pinned_bytes_ + size <= max_pinned_bytes &&
      cudaHostAlloc(&fresh, size, cudaHostAllocDefault) == cudaSuccess) {
    blocks_.emplace(reinterpret_cast<uintptr_t>(fresh), block{size, true});
    pinned_bytes_ += size;
    return fresh;
  }
  cudaGetLastError();  // a failed cudaHostAlloc is not sticky; clear it for the next check
  if (!reported_heap_) {
    reported_heap_ = true;
    log_event(log_level::warning, "pinned_picture_memory_exhausted",
              {{"pinned_bytes", int64_t(pinned_bytes_)}, {"requested_bytes", int64_t(bytes)},
               {"fallback", "heap memory and a staging copy for the upload"}});
  }
  return ::operator new(bytes, std::align_val_t(64));
}

void pinned_pictures::deallocate(void* pointer, size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  const auto it = blocks_.find(reinterpret_cast<uintptr_t>(pointer));
  if (it != blocks_.end()) {
    it->second.in_use = false;
    return;
  }
  ::operator delete(pointer, bytes, std::align_val_t(64));
}

bool pinned_pictures::pinned(const void* pointer, size_t bytes) const {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  std::lock_guard lock(mutex_);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second.size;
}

}  // namespace cua_s1::gpu
