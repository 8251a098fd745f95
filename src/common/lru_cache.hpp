// A bounded map that makes room by evicting its least recently used value (the CUDA graph
// caches: gpu/language_graphs.hpp, gpu/vision_graphs.hpp).
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <tuple>
#include <utility>

namespace cua_s1 {

template <class Key, class Value>
class lru_cache {
 public:
  explicit lru_cache(size_t capacity) : capacity_(capacity) {}
  lru_cache(const lru_cache&) = delete;
  lru_cache& operator=(const lru_cache&) = delete;

  size_t capacity() const { return capacity_; }

  // The value under `key`, now the most recently used; null when there is none.
  Value* find(const Key& key) {
    const auto found = entries_.find(key);
    if (found == entries_.end()) return nullptr;
    ages_.splice(ages_.begin(), ages_, found->second.age);
    return &found->second.value;
  }

  // Stores make() under `key` (which holds nothing) as the most recently used value. When the
  // cache is full the least recently used value goes first, before make() runs, so that what it
  // held is given back before the new value takes its own. Nothing is stored if make() throws.
  template <class Make>
  Value& emplace(const Key& key, Make&& make) {
    if (entries_.size() >= capacity_ && !ages_.empty()) erase(ages_.back());
    const auto stored = entries_.emplace(std::piecewise_construct, std::forward_as_tuple(key),
                                         std::forward_as_tuple(make)).first;
    ages_.push_front(key);
    stored->second.age = ages_.begin();
    return stored->second.value;
  }

  void erase(const Key& key) {
    const auto found = entries_.find(key);
    if (found == entries_.end()) return;
    ages_.erase(found->second.age);
    entries_.erase(found);
  }

  void clear() {
    entries_.clear();
    ages_.clear();
  }

 private:
  struct slot {
    template <class Make>
    explicit slot(Make& make) : value(make()) {}  // made in place: Value need not move
    Value value;
    typename std::list<Key>::iterator age;
  };

  size_t capacity_;
  std::map<Key, slot> entries_;
  std::list<Key> ages_;  // most recently used first
};

}  // namespace cua_s1
