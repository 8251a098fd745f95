// A blocking parallel loop over an index range on short-lived std::threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace cua_s1::cpu {

// Calls body(begin, end) on up to `threads` contiguous slices of [0, count); the calling thread
// takes the first slice. For coarse work only (each call starts threads).
template <class Body>
void parallel_for(size_t count, unsigned threads, Body&& body) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>(threads, count));
  if (workers == 1) {
    if (count) body(size_t(0), count);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  const size_t step = (count + workers - 1) / workers;
  for (size_t w = 1; w < workers; ++w) {
    const size_t begin = w * step, end = std::min(count, begin + step);
    if (begin < end) pool.emplace_back([&body, begin, end] { body(begin, end); });
  }
  body(size_t(0), std::min(count, step));
  for (auto& thread : pool) thread.join();
}

}  // namespace cua_s1::cpu
