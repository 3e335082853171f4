// The emulated Objective-C runtime: selectors, classes, message lookup, reference counting with
// zombies, autorelease pools, and the violation log. See objc_runtime.h.
#include "metal_emu/objc_runtime.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_set>

namespace tmps::emu {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<std::string>> selectors;
  std::unordered_map<std::string, EmuClass*> classes;  // live for the process
  std::vector<std::string> violations;
  std::map<std::string, long> live;
  long allocated = 0, deallocated = 0, autorelease_without_pool = 0;
  std::deque<EmuObject*> zombies;  // deallocated objects kept to catch late messages
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: objects may die during static teardown
  return *r;
}

constexpr size_t kMaxZombies = 1 << 16;

EmuClass* make_class_locked(Registry& r, const std::string& name, const std::string& super);

EmuClass* zombie_class() {
  static EmuClass* z = [] {
    auto* c = new EmuClass;
    c->name = "_NSZombie_";
    c->isa = c;
    return c;
  }();
  return z;
}

struct PoolFrame {
  EmuObject* pool;
  std::vector<EmuObject*> objects;
};
// Per-thread state. The main thread's is never destroyed: static destructors (our devices' at
// exit) may still drain pools after its TLS destructors ran. Other threads free theirs when
// they exit (found by LeakSanitizer: 88 bytes per exited thread, scripts/sanitize.sh).
template <class T>
T& thread_state() {
  struct Owner {
    T* p = new T;
    ~Owner() {
      if (static_cast<pid_t>(syscall(SYS_gettid)) != getpid()) delete p;
    }
  };
  thread_local Owner owner;
  return *owner.p;
}
std::vector<PoolFrame>& pools() { return thread_state<std::vector<PoolFrame>>(); }
std::string& failure_message() { return thread_state<std::string>(); }  // for fail_imp

void drain(PoolFrame& frame) {
  // Objects released by the drain may autorelease more into this same pool.
  while (!frame.objects.empty()) {
    std::vector<EmuObject*> objects;
    objects.swap(frame.objects);
    for (EmuObject* o : objects) o->release();
  }
}

[[noreturn]] void fail_imp() { violation(failure_message()); }
uint64_t nil_imp() { return 0; }

}  // namespace

void note_violation(const std::string& what) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.violations.push_back(what);
}

[[noreturn]] void violation(const std::string& what) {
  note_violation(what);
  throw ValidationError("Metal API validation: " + what);
}

std::vector<std::string> violations() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.violations;
}

void clear_violations() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.violations.clear();
}

ObjectStats object_stats() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ObjectStats s;
  for (const auto& [name, n] : r.live)
    if (n) s.live[name] = n;
  s.allocated = r.allocated;
  s.deallocated = r.deallocated;
  s.autorelease_without_pool = r.autorelease_without_pool;
  return s;
}

// --- classes ---------------------------------------------------------------------------------

IMP EmuClass::find(SEL sel) const {
  for (const EmuClass* c = this; c; c = c->super) {
    auto it = c->methods.find(sel);
    if (it != c->methods.end()) return it->second;
  }
  return nullptr;
}

namespace {
EmuClass* make_class_locked(Registry& r, const std::string& name, const std::string& super) {
  auto it = r.classes.find(name);
  if (it != r.classes.end()) return it->second;
  EmuClass* super_cls = nullptr;
  if (name != "NSObject") super_cls = make_class_locked(r, super.empty() ? "NSObject" : super, "NSObject");
  auto* meta = new EmuClass;
  meta->name = name;
  meta->is_meta = true;
  meta->super = super_cls ? static_cast<EmuClass*>(super_cls->isa) : nullptr;
  auto* cls = new EmuClass;
  cls->name = name;
  cls->super = super_cls;
  cls->isa = meta;
  meta->isa = super_cls ? super_cls->isa->isa : meta;  // root metaclass
  r.classes[name] = cls;
  return cls;
}
}  // namespace

EmuClass* emu_class_named(const std::string& name, const std::string& super) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return make_class_locked(r, name, super);
}

void add_method(const std::string& cls, const char* selector, IMP imp) {
  EmuClass* c = emu_class_named(cls);
  c->methods[sel_registerName(selector)] = imp;
}

void add_class_method(const std::string& cls, const char* selector, IMP imp) {
  EmuClass* c = emu_class_named(cls);
  static_cast<EmuClass*>(c->isa)->methods[sel_registerName(selector)] = imp;
}

// --- objects ---------------------------------------------------------------------------------

EmuObject::EmuObject(EmuClass* cls) : original_(cls) {
  isa = cls;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ++r.live[cls->name];
  ++r.allocated;
}

EmuClass* EmuObject::emu_class() const { return original_; }
const char* EmuObject::class_name() const { return original_->name.c_str(); }
bool EmuObject::is_zombie() const { return isa == zombie_class(); }

void EmuObject::retain() { refs_.fetch_add(1); }

namespace {
// What remains of a deallocated object: its class pointer says "zombie", so any message to it
// is reported; it occupies the start of the dead object's memory (every object is at least this big).
struct Zombie final : EmuObject {
  explicit Zombie(EmuClass* original) : EmuObject(ZombieTag{}, original) {}
};
}  // namespace

EmuObject::EmuObject(ZombieTag, EmuClass* original) : refs_(0), original_(original) { isa = zombie_class(); }

void EmuObject::release() {
  long left = refs_.fetch_sub(1) - 1;
  if (left > 0) return;
  if (left < 0) violation(std::string("over-release of a ") + class_name());
  EmuClass* original = original_;
  void* memory = dynamic_cast<void*>(this);  // the start of the allocation (most-derived object)
  dealloc();
  this->~EmuObject();  // virtual: the derived destructors release the members
  auto* zombie = new (memory) Zombie(original);
  Registry& r = registry();
  Zombie* evict = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    --r.live[original->name];
    ++r.deallocated;
    r.zombies.push_back(zombie);
    if (r.zombies.size() > kMaxZombies) {
      evict = static_cast<Zombie*>(r.zombies.front());
      r.zombies.pop_front();
    }
  }
  if (evict) {
    evict->~Zombie();
    ::operator delete(static_cast<void*>(evict));
  }
}

EmuObject* EmuObject::autorelease() {
  if (pools().empty()) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    ++r.autorelease_without_pool;  // Cocoa logs "just leaking" and leaks it
    r.violations.push_back(std::string("a ") + class_name() + " was autoreleased with no pool in place (leaked)");
    return this;
  }
  pools().back().objects.push_back(this);
  return this;
}

EmuObject* from_id(const void* object) {
  if (!object) return nullptr;
  auto* o = static_cast<objc_object*>(const_cast<void*>(object));
  auto* cls = static_cast<EmuClass*>(o->isa);
  if (cls->is_meta) violation("a class object was passed where an instance was expected");
  return static_cast<EmuObject*>(o);
}

void push_autorelease_pool(EmuObject* pool) { pools().push_back({pool, {}}); }

void pop_autorelease_pool(EmuObject* pool) {
  // Draining a pool drains every pool pushed after it (Cocoa's rule).
  while (!pools().empty()) {
    PoolFrame frame = std::move(pools().back());
    pools().pop_back();
    drain(frame);
    if (frame.pool == pool) return;
  }
}

void register_foundation();
void register_metal();
void construct_constant_strings();

void ensure_classes() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_foundation();
    register_metal();
    construct_constant_strings();
  });
}

}  // namespace tmps::emu

using namespace tmps::emu;

// --- the C API metal-cpp calls ---------------------------------------------------------------
extern "C" {

SEL sel_registerName(const char* name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& slot = r.selectors[name];
  if (!slot) slot = std::make_unique<std::string>(name);
  return reinterpret_cast<SEL>(slot->c_str());
}

const char* sel_getName(SEL sel) { return reinterpret_cast<const char*>(sel); }

id objc_lookUpClass(const char* name) {
  ensure_classes();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.classes.find(name);
  // Classes the emulation does not implement do not exist (as on an OS that lacks them).
  return it == r.classes.end() ? nullptr : reinterpret_cast<id>(static_cast<objc_class*>(it->second));
}

Protocol* objc_getProtocol(const char*) { return nullptr; }

Class object_getClass(id obj) { return obj ? obj->isa : nullptr; }

const char* class_getName(Class cls) { return cls ? static_cast<EmuClass*>(cls)->name.c_str() : "nil"; }

BOOL class_respondsToSelector(Class cls, SEL sel) {
  return cls && static_cast<EmuClass*>(cls)->find(sel) != nullptr;
}

// Called by the msgSend trampolines with the receiver and selector. Never throws (the
// trampoline has no unwind info): failures return fail_imp, which throws from a C++ frame.
IMP tmps_emu_lookup(objc_object* self, SEL sel) {
  if (!self) return reinterpret_cast<IMP>(&nil_imp);  // messages to nil return zero
  auto* cls = static_cast<EmuClass*>(self->isa);
  if (cls == zombie_class()) {
    failure_message() = std::string("-[") + static_cast<EmuObject*>(self)->class_name() + " " + sel_getName(sel) +
                "] sent to a deallocated instance (use after release, or an over-release)";
    return reinterpret_cast<IMP>(&fail_imp);
  }
  if (IMP imp = cls->find(sel)) return imp;
  failure_message() = std::string(cls->is_meta ? "+[" : "-[") + cls->name + " " + sel_getName(sel) +
              "]: unrecognized selector (the emulation implements only what csrc/metal/ uses)";
  return reinterpret_cast<IMP>(&fail_imp);
}

}  // extern "C"
