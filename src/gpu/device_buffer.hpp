// Stream-ordered device allocations (cudaMallocAsync from the device's pool, which keeps freed
// memory cached, so per-request buffers cost no cudaMalloc after the first requests).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gpu/cuda_check.hpp"

namespace cua_s1::gpu {

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(size_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count)
      check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&data_), count * sizeof(T), stream),
                 "cudaMallocAsync");
  }
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& other) noexcept { swap(other); }
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  T* get() const { return data_; }
  size_t size() const { return count_; }

 private:
  void release() {
    if (data_) cudaFreeAsync(data_, stream_);  // ordered after the work that uses it
    data_ = nullptr;
    count_ = 0;
  }
  void swap(device_buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(stream_, other.stream_);
  }

  T* data_ = nullptr;
  size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace cua_s1::gpu
