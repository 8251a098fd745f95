// Pinned staging blocks (cudaHostAlloc), bump-allocated in 256-byte steps.
#include "gpu/host_staging.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "gpu/cuda_check.hpp"

namespace cua_s1::gpu {

host_staging::~host_staging() {
  for (block& b : blocks_) cudaFreeHost(b.data);
}

void host_staging::reset() {
  for (block& b : blocks_) b.used = 0;
  current_ = 0;
}

void* host_staging::take(size_t bytes) {
  bytes = std::max<size_t>((bytes + 255) / 256 * 256, 256);
  while (current_ < blocks_.size()) {
    block& b = blocks_[current_];
    if (b.size - b.used >= bytes) {
      void* out = b.data + b.used;
      b.used += bytes;
      return out;
    }
    ++current_;
  }
  block fresh;
  fresh.size = std::max<size_t>(bytes, size_t(8) << 20);
  check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&fresh.data), fresh.size, cudaHostAllocDefault),
             "cudaHostAlloc (staging)");
  fresh.used = bytes;
  blocks_.push_back(fresh);
  current_ = blocks_.size() - 1;
  return fresh.data;
}

}  // namespace cua_s1::gpu
