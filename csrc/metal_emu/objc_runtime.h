// The emulated Objective-C runtime (Linux only; never part of a Mac build).
//
// Objects: every emulated Foundation/Metal object is an EmuObject: a C++ object whose
// objc_object base (the `id` metal-cpp holds) carries the class pointer, so the message
// trampolines (msgsend_*.S) can find the method without knowing the C++ type. Classes are
// EmuClass objects with a selector -> IMP table; class methods live in the class's metaclass.
//
// Reference counting follows Cocoa's rules: alloc/new/copy return +1, everything else is
// autoreleased into the innermost NSAutoreleasePool of the calling thread. A released-to-zero
// object is deallocated (its payload freed) but its memory is kept as a "zombie" (like
// NSZombieEnabled) for a while, so a message to it, or a second release, is reported instead
// of being a use-after-free. The object's destructor runs at once (its members are released);
// a small zombie object takes its place in the same memory.
//
// Misuse (a Metal API-validation rule, an over-release, an unknown selector) is recorded in the
// violation log and thrown as emu::ValidationError, which the caller sees as a C++ exception.
#pragma once

#include <objc/runtime.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tmps::emu {

struct ValidationError : std::logic_error {
  using std::logic_error::logic_error;
};

// Records the violation and throws ValidationError("Metal API validation: <what>").
[[noreturn]] void violation(const std::string& what);
// Records a violation without throwing (what Cocoa only logs).
void note_violation(const std::string& what);
std::vector<std::string> violations();
void clear_violations();

struct EmuClass;

class EmuObject : public objc_object {
 public:
  explicit EmuObject(EmuClass* cls);
  virtual ~EmuObject() = default;

  id self_id() { return static_cast<objc_object*>(this); }
  EmuClass* emu_class() const;
  const char* class_name() const;

  void retain();
  void release();
  EmuObject* autorelease();
  long retain_count() const { return refs_.load(); }
  bool is_zombie() const;

 protected:
  // Called once when the count reaches zero, before the destructor (which releases members).
  virtual void dealloc() {}
  struct ZombieTag {};
  EmuObject(ZombieTag, EmuClass* original);  // a zombie: not counted as a live object

 private:
  std::atomic<long> refs_{1};
  EmuClass* original_;  // the class, also once the object is a zombie
};

// Typed access from an `id` (the receiver of a message or an argument).
EmuObject* from_id(const void* object);  // nullptr stays nullptr
template <class T>
T* as(const void* object) {
  EmuObject* o = from_id(object);
  if (!o) return nullptr;
  auto* t = dynamic_cast<T*>(o);
  if (!t) violation(std::string("object of class ") + o->class_name() + " passed where another class was expected");
  return t;
}

struct EmuClass : objc_class {
  std::string name;
  EmuClass* super = nullptr;
  bool is_meta = false;
  EmuObject* (*factory)(EmuClass*) = nullptr;  // +alloc of this class (nullptr: not allocatable)
  std::unordered_map<SEL, IMP> methods;
  IMP find(SEL sel) const;
};

// The class `name` (created on first use; metaclass included).
EmuClass* emu_class_named(const std::string& name, const std::string& super = "NSObject");
void add_method(const std::string& cls, const char* selector, IMP imp);
void add_class_method(const std::string& cls, const char* selector, IMP imp);

// Registers every emulated class (once; called before any class lookup).
void ensure_classes();

// Live objects per class, allocated and deallocated totals (leak accounting).
struct ObjectStats {
  std::map<std::string, long> live;
  long allocated = 0;
  long deallocated = 0;
  long autorelease_without_pool = 0;
};
ObjectStats object_stats();

// Pools of the calling thread (NSAutoreleasePool).
void push_autorelease_pool(EmuObject* pool);
void pop_autorelease_pool(EmuObject* pool);  // drains everything autoreleased into it

// Method thunks: IMPs that call a C++ member function on the receiver. Every IMP has the C
// signature R(id self, SEL _cmd, Args...) that metal-cpp casts objc_msgSend to.
template <auto Member>
struct Thunk;
template <class C, class R, class... A, R (C::*Member)(A...)>
struct Thunk<Member> {
  static R call(objc_object* self, SEL, A... args) { return (checked(self)->*Member)(args...); }
  static C* checked(objc_object* self) {
    C* c = as<C>(self);
    if (!c) violation("message sent to nil through a thunk");
    return c;
  }
};
template <auto Member>
IMP imp() {
  return reinterpret_cast<IMP>(&Thunk<Member>::call);
}

}  // namespace tmps::emu
