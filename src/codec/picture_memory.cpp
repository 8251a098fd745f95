// The process-wide picture memory source (see picture_memory.hpp).
#include "codec/picture_memory.hpp"

#include <atomic>

namespace cua_s1 {
namespace {
std::atomic<picture_memory*> installed{nullptr};
}  // namespace

void use_picture_memory(picture_memory* source) noexcept { installed.store(source); }

picture_memory* current_picture_memory() noexcept { return installed.load(std::memory_order_acquire); }

}  // namespace cua_s1
