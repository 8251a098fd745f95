// GPU test helpers: whether a CUDA device is present (tests are skipped with a message where
// not), and the CUDA backend's header when this build has it.
#pragma once

#include <boost/test/unit_test.hpp>
#include <iostream>

#ifdef CUA_S1_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#endif

namespace cua_s1::test {

// A Boost.Test precondition: true when a CUDA device can run the tests; else says why.
inline boost::test_tools::assertion_result cuda_present(boost::unit_test::test_unit_id) {
#ifdef CUA_S1_HAVE_CUDA
  if (cuda_device_count() > 0) return true;
  boost::test_tools::assertion_result result(false);
  result.message() << "SKIPPED: no CUDA device on this machine (GPU tests run on the GPU host)";
  return result;
#else
  boost::test_tools::assertion_result result(false);
  result.message() << "SKIPPED: this build has no CUDA backend";
  return result;
#endif
}

// Global fixture: prints one visible line when every GPU test of the binary is skipped.
struct cuda_skip_notice {
  cuda_skip_notice() {
    const auto present = cuda_present(0);
    if (!present) std::cout << present.message() << std::endl;
  }
};

}  // namespace cua_s1::test
