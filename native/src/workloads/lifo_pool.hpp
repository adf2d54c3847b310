// A device-memory pool that hands freed blocks back last-in-first-out, like a caching allocator's
// free list. Its blocks are allocated up front (so using it inside a capture allocates nothing),
// and the order is the hazard train reproduces: a parameter updated out of place (alloc new,
// free old) alternates between two addresses with period 2, so a graph that froze one address
// reads the stale buffer every second replay.
#pragma once

#include <cstddef>
#include <vector>

#include "graphrt/handles.hpp"

namespace graphrt {

class LifoPool {
 public:
  LifoPool(Backend& backend, std::size_t blocks, std::size_t floats_per_block)
      : storage_(backend, blocks * floats_per_block), block_(floats_per_block), blocks_(blocks) {
    reset();
  }
  // All blocks free again, block 0 on top.
  void reset() {
    free_.clear();
    for (std::size_t i = blocks_; i-- > 0;) free_.push_back(storage_.get() + i * block_);
  }
  float* alloc() {
    RT_CHECK(!free_.empty(), Errc::Internal, "", "LifoPool exhausted");
    float* p = free_.back();
    free_.pop_back();
    return p;
  }
  void free(float* p) { free_.push_back(p); }

 private:
  DeviceBuffer<float> storage_;
  std::size_t block_;
  std::size_t blocks_;
  std::vector<float*> free_;
};

}  // namespace graphrt
