// One executable CUDA graph: the work a function enqueues on a stream, captured once and
// launched (replayed) as often as wanted; destroyed with the object.
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "common/outcome.hpp"

namespace cua_s1::gpu {

class cuda_graph {
 public:
  cuda_graph() = default;
  ~cuda_graph();  // a graph still running is freed when it completes
  cuda_graph(cuda_graph&& other) noexcept;
  cuda_graph& operator=(cuda_graph&& other) noexcept;
  cuda_graph(const cuda_graph&) = delete;
  cuda_graph& operator=(const cuda_graph&) = delete;

  // Captures what `enqueue` puts on `stream` (a thread-local stream capture) and instantiates
  // it. A CUDA error that leaves the context usable (work a capture does not allow, ...) fails
  // the capture: the failure carries the error, none stays pending, and the stream is no longer
  // capturing. A sticky CUDA error, or another exception from `enqueue`, propagates (the capture
  // ended).
  static outcome<cuda_graph> capture(cudaStream_t stream, const std::function<void()>& enqueue);

  explicit operator bool() const { return exec_ != nullptr; }

  // Enqueues the captured work on `stream`.
  void launch(cudaStream_t stream) const;

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace cua_s1::gpu
