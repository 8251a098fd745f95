// Stream capture into an executable graph, launch and destruction.
#include "gpu/cuda_graph.hpp"

#include <utility>

#include "gpu/cuda_check.hpp"

namespace cua_s1::gpu {

cuda_graph::~cuda_graph() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

cuda_graph::cuda_graph(cuda_graph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}

cuda_graph& cuda_graph::operator=(cuda_graph&& other) noexcept {
  if (this != &other) {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

outcome<cuda_graph> cuda_graph::capture(cudaStream_t stream, const std::function<void()>& enqueue) {
  cudaGraph_t graph = nullptr;
  try {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);  // ends the (invalidated) capture
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    cuda_graph made;
    const cudaError_t instantiated = cudaGraphInstantiate(&made.exec_, graph, 0);
    cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) made.exec_ = nullptr;
    check_cuda(instantiated, "cudaGraphInstantiate");
    return made;
  } catch (const cuda_error& error) {
    if (error.sticky()) throw;
    cudaGetLastError();  // a failed capture leaves a non-sticky error behind
    return failure{500, error.what()};
  }
}

void cuda_graph::launch(cudaStream_t stream) const {
  check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
}

}  // namespace cua_s1::gpu
