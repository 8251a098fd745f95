// Persistent helper threads that join a caller's divisible work (the PNG row wavefront), so a
// request never pays for creating and joining threads.
#pragma once

#include <chrono>
#include <functional>

namespace cua_s1 {

// Runs `work` on the calling thread and at the same time on up to `helpers` pooled threads
// (created on first need, kept for the process), and returns once every copy that started has
// returned. A copy that no pooled thread has picked up by the time the caller's own copy returns
// is dropped, so `work` must share the job out itself and let any single copy finish all of it.
void run_with_helpers(unsigned helpers, const std::function<void()>& work);

// Wakes up to `helpers` pooled threads to wait awake (yielding) for up to `spin` for the next
// run_with_helpers call, so that a call made soon after (the unfilter after the inflate) finds
// them running instead of asleep between requests.
void wake_helpers_ahead(unsigned helpers, std::chrono::microseconds spin);

}  // namespace cua_s1
