// Error checks for CUDA runtime and cuBLASLt calls: a failure throws with the call named.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cua_s1::gpu {

// Thrown for every CUDA or cuBLASLt failure; `sticky` when the context is unusable afterwards
// (illegal address, launch failure, ...), which the server treats as fatal.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(const std::string& what, bool sticky) : std::runtime_error(what), sticky_(sticky) {}
  bool sticky() const { return sticky_; }

 private:
  bool sticky_;
};

// True for the errors after which the CUDA context cannot be used again.
bool is_sticky(cudaError_t status);

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw cuda_error(std::string(what) + ": " + cudaGetErrorString(status), is_sticky(status));
}

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw cuda_error(std::string(what) + ": cuBLASLt status " + std::to_string(int(status)), false);
}

}  // namespace cua_s1::gpu
