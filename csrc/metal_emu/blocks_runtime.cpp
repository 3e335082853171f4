// A minimal blocks runtime (clang's "Block Implementation Specification" ABI) for the emulated
// Metal runtime: metal-cpp turns std::function completion handlers into blocks capturing a
// __block variable, and Metal copies the block to keep it past the call. Implemented: heap
// copies of blocks and of __block variables with their copy/dispose helpers; no GC, no weak.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "metal_emu/blocks.h"

namespace {

enum : int32_t {
  kRefcountMask = 0xfffe,  // counted in units of 2
  kNeedsFree = 1 << 24,
  kHasCopyDispose = 1 << 25,
  kIsGlobal = 1 << 28,
  kByrefLayoutExtended = 1 << 28,
  kByrefLayoutMask = 0xf << 28,
};
enum : int { kFieldIsObject = 3, kFieldIsBlock = 7, kFieldIsByref = 8, kFieldIsWeak = 16, kByrefCaller = 128 };

struct Descriptor {
  unsigned long reserved;
  unsigned long size;
  void (*copy)(void* dst, const void* src);  // present when kHasCopyDispose
  void (*dispose)(const void*);
};

struct Byref {
  void* isa;
  Byref* forwarding;
  int32_t flags;
  uint32_t size;
  void (*keep)(Byref* dst, Byref* src);  // present when kHasCopyDispose
  void (*destroy)(Byref*);
  const char* layout;                    // present when kByrefLayoutExtended
};

void* byref_copy(const void* arg) {
  auto* src = static_cast<Byref*>(const_cast<void*>(arg));
  if ((src->forwarding->flags & kRefcountMask) == 0) {
    auto* copy = static_cast<Byref*>(std::malloc(src->size));
    copy->isa = nullptr;
    copy->flags = src->flags | kNeedsFree | 4;  // one reference from the stack frame, one from the copy
    copy->forwarding = copy;
    src->forwarding = copy;
    copy->size = src->size;
    if (src->flags & kHasCopyDispose) {
      copy->keep = src->keep;
      copy->destroy = src->destroy;
      if ((src->flags & kByrefLayoutMask) == kByrefLayoutExtended) copy->layout = src->layout;
      src->keep(copy, src);  // e.g. the std::function's copy constructor
    } else {
      constexpr size_t header = 2 * sizeof(void*) + 2 * sizeof(int32_t);  // isa, forwarding, flags, size
      std::memmove(reinterpret_cast<char*>(copy) + header, reinterpret_cast<char*>(src) + header, src->size - header);
    }
  } else if (src->forwarding->flags & kNeedsFree) {
    __atomic_add_fetch(&src->forwarding->flags, 2, __ATOMIC_SEQ_CST);
  }
  return src->forwarding;
}

void byref_release(void* arg) {
  auto* byref = static_cast<Byref*>(arg)->forwarding;
  if (!(byref->flags & kNeedsFree)) return;  // still on the stack
  if ((__atomic_sub_fetch(&byref->flags, 2, __ATOMIC_SEQ_CST) & kRefcountMask) == 0) {
    if (byref->flags & kHasCopyDispose) byref->destroy(byref);
    std::free(byref);
  }
}

}  // namespace

extern "C" {

void* _NSConcreteStackBlock[32];
void* _NSConcreteGlobalBlock[32];
void* _NSConcreteMallocBlock[32];

void* _Block_copy(const void* arg) {
  if (!arg) return nullptr;
  auto* block = static_cast<BlockLayout*>(const_cast<void*>(arg));
  if (block->flags & kNeedsFree) {
    __atomic_add_fetch(&block->flags, 2, __ATOMIC_SEQ_CST);
    return block;
  }
  if (block->flags & kIsGlobal) return block;
  auto* desc = static_cast<Descriptor*>(block->descriptor);
  auto* copy = static_cast<BlockLayout*>(std::malloc(desc->size));
  std::memcpy(copy, block, desc->size);
  copy->flags = (block->flags & ~kRefcountMask) | kNeedsFree | 2;
  copy->isa = _NSConcreteMallocBlock;
  if (block->flags & kHasCopyDispose) desc->copy(copy, block);
  return copy;
}

void _Block_release(const void* arg) {
  if (!arg) return;
  auto* block = static_cast<BlockLayout*>(const_cast<void*>(arg));
  if (!(block->flags & kNeedsFree)) return;
  if ((__atomic_sub_fetch(&block->flags, 2, __ATOMIC_SEQ_CST) & kRefcountMask) == 0) {
    auto* desc = static_cast<Descriptor*>(block->descriptor);
    if (block->flags & kHasCopyDispose) desc->dispose(block);
    std::free(block);
  }
}

void _Block_object_assign(void* dest, const void* object, const int flags) {
  void** slot = static_cast<void**>(dest);
  if (flags & kByrefCaller) {
    *slot = const_cast<void*>(object);
    return;
  }
  switch (flags & (kFieldIsObject | kFieldIsBlock | kFieldIsByref | kFieldIsWeak)) {
    case kFieldIsBlock:
      *slot = _Block_copy(object);
      break;
    case kFieldIsByref:
    case kFieldIsByref | kFieldIsWeak:
      *slot = byref_copy(object);
      break;
    default:  // objects: the emulation's blocks never capture Objective-C objects
      *slot = const_cast<void*>(object);
      break;
  }
}

void _Block_object_dispose(const void* object, const int flags) {
  switch (flags & (kFieldIsObject | kFieldIsBlock | kFieldIsByref | kFieldIsWeak)) {
    case kFieldIsByref:
    case kFieldIsByref | kFieldIsWeak:
      byref_release(const_cast<void*>(object));
      break;
    case kFieldIsBlock:
      _Block_release(object);
      break;
    default:
      break;
  }
}

}  // extern "C"
