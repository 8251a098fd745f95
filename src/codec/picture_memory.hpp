// Where decoded pictures' bytes live: the heap, or a source a backend installs for the whole
// process (the CUDA backend: reused pinned host blocks it uploads from without a staging copy,
// whose pages are already mapped and warm when the next picture is decoded into them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace cua_s1 {

// A provider of picture memory. It must stay alive for the rest of the process once installed
// (pictures it handed out may be freed on any thread at any later time).
class picture_memory {
 public:
  virtual ~picture_memory() = default;
  // At least `bytes` bytes, 64-byte aligned; throws std::bad_alloc when none can be had.
  virtual void* allocate(size_t bytes) = 0;
  // Takes back what allocate(bytes) returned, from any thread.
  virtual void deallocate(void* pointer, size_t bytes) noexcept = 0;
};

// Installs `source` for pictures decoded from now on (null: the heap again). Not owned.
void use_picture_memory(picture_memory* source) noexcept;
picture_memory* current_picture_memory() noexcept;

// Pictures smaller than this always come from the heap.
inline constexpr size_t min_picture_memory_bytes = size_t(64) << 10;

// std::allocator for picture bytes: from the source installed when the container was made
// (large blocks only), else the heap. Elements are default-initialised: resize() leaves bytes
// uninitialised, for the decoders overwrite every one.
template <class T>
struct picture_allocator {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;

  picture_memory* source = current_picture_memory();

  picture_allocator() noexcept = default;
  template <class U>
  picture_allocator(const picture_allocator<U>& other) noexcept : source(other.source) {}

  T* allocate(size_t count) {
    const size_t bytes = count * sizeof(T);
    if (source && bytes >= min_picture_memory_bytes) return static_cast<T*>(source->allocate(bytes));
    return std::allocator<T>().allocate(count);
  }
  void deallocate(T* pointer, size_t count) noexcept {
    const size_t bytes = count * sizeof(T);
    if (source && bytes >= min_picture_memory_bytes) return source->deallocate(pointer, bytes);
    std::allocator<T>().deallocate(pointer, count);
  }
  template <class U, class... Args>
  void construct(U* pointer, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(pointer)) U;
    else
      ::new (static_cast<void*>(pointer)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const picture_allocator<U>& other) const noexcept {
    return source == other.source;
  }
};

using picture_bytes = std::vector<uint8_t, picture_allocator<uint8_t>>;

}  // namespace cua_s1
