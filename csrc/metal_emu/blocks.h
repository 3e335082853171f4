// The block layout shared by blocks_runtime.cpp and the objects that store and call blocks.
#pragma once

#include <cstdint>
#include <utility>

extern "C" {
struct BlockLayout {
  void* isa;
  int32_t flags;
  int32_t reserved;
  void (*invoke)(void*, ...);
  void* descriptor;
};
void* _Block_copy(const void* block);
void _Block_release(const void* block);
}

namespace tmps::emu {

// A heap copy of a block taking one pointer argument (Metal's completion handlers), released once.
class Block1 {
 public:
  Block1() = default;
  explicit Block1(const void* block) : block_(static_cast<BlockLayout*>(_Block_copy(block))) {}
  Block1(Block1&& o) noexcept : block_(o.block_) { o.block_ = nullptr; }
  Block1& operator=(Block1&& o) noexcept {
    std::swap(block_, o.block_);
    return *this;
  }
  Block1(const Block1&) = delete;
  Block1& operator=(const Block1&) = delete;
  ~Block1() { _Block_release(block_); }
  void operator()(void* arg) const {
    reinterpret_cast<void (*)(void*, void*)>(block_->invoke)(block_, arg);
  }

 private:
  BlockLayout* block_ = nullptr;
};

}  // namespace tmps::emu
