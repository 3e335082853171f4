// Emulated Foundation objects: see foundation.h.
#include "metal_emu/foundation.h"

#include <Foundation/Foundation.hpp>

#include <cstdlib>
#include <cstring>


namespace tmps::emu {
namespace {

using OSVersion = NS::OperatingSystemVersion;  // the exact layout metal-cpp passes by value

// macOS version the emulation reports: TRITON_MPS_EMU_MACOS="major.minor" (default 15.0).
OSVersion emulated_os() {
  OSVersion v{15, 0, 0};
  if (const char* s = std::getenv("TRITON_MPS_EMU_MACOS")) {
    char* end = nullptr;
    v.majorVersion = std::strtol(s, &end, 10);
    v.minorVersion = (end && *end == '.') ? std::strtol(end + 1, nullptr, 10) : 0;
  }
  return v;
}

class NSDictionaryEmu : public EmuObject {
 public:
  using EmuObject::EmuObject;
  id init(const void* const* values, const void* const* keys, unsigned long n) {
    for (unsigned long i = 0; i < n; ++i) {
      EmuObject* k = from_id(keys[i]);
      EmuObject* v = from_id(values[i]);
      k->retain();
      v->retain();
      entries_.push_back({k, v});
    }
    return self_id();
  }
  id object_for_key(const void* key) {
    auto* k = dynamic_cast<NSStringEmu*>(from_id(key));
    for (auto& [ek, ev] : entries_) {
      auto* s = dynamic_cast<NSStringEmu*>(ek);
      if (ek == from_id(key) || (s && k && s->str() == k->str())) return ev->self_id();
    }
    return nullptr;
  }

 protected:
  void dealloc() override {
    for (auto& [k, v] : entries_) {
      k->release();
      v->release();
    }
    entries_.clear();
  }

 private:
  std::vector<std::pair<EmuObject*, EmuObject*>> entries_;
};

class NSURLEmu : public EmuObject {
 public:
  explicit NSURLEmu(std::string path) : EmuObject(emu_class_named("NSURL")), path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  id path_string() { return make_string(path_); }

 private:
  std::string path_;
};

class NSProcessInfoEmu : public EmuObject {
 public:
  NSProcessInfoEmu() : EmuObject(emu_class_named("NSProcessInfo")) {}
  id version_string() {
    OSVersion v = emulated_os();
    return make_string("Version " + std::to_string(v.majorVersion) + "." + std::to_string(v.minorVersion) +
                       " (emulated Metal on Linux)");
  }
  OSVersion version() { return emulated_os(); }
  bool at_least(OSVersion want) {
    OSVersion v = emulated_os();
    if (v.majorVersion != want.majorVersion) return v.majorVersion > want.majorVersion;
    if (v.minorVersion != want.minorVersion) return v.minorVersion > want.minorVersion;
    return v.patchVersion >= want.patchVersion;
  }
};

class NSAutoreleasePoolEmu : public EmuObject {
 public:
  using EmuObject::EmuObject;
  id init() {
    push_autorelease_pool(this);
    return self_id();
  }

 protected:
  void dealloc() override { pop_autorelease_pool(this); }
};

// --- generic NSObject methods -----------------------------------------------------------------
id obj_retain(objc_object* self, SEL) {
  from_id(self)->retain();
  return self;
}
void obj_release(objc_object* self, SEL) { from_id(self)->release(); }
id obj_autorelease(objc_object* self, SEL) { return from_id(self)->autorelease()->self_id(); }
unsigned long obj_retain_count(objc_object* self, SEL) { return from_id(self)->retain_count(); }
id obj_init(objc_object* self, SEL) { return self; }
bool obj_responds(objc_object* self, SEL, SEL sel) { return class_respondsToSelector(self->isa, sel); }
bool obj_is_equal(objc_object* self, SEL, const void* other) { return self == other; }
unsigned long obj_hash(objc_object* self, SEL) { return reinterpret_cast<uintptr_t>(self); }
// Class objects live forever: retain/release are no-ops, as in Cocoa.
id cls_self(objc_object* self, SEL) { return self; }
void cls_noop(objc_object*, SEL) {}
id cls_alloc(objc_object* self, SEL) {
  auto* cls = static_cast<EmuClass*>(reinterpret_cast<objc_class*>(self));
  if (!cls->factory) violation("+[" + cls->name + " alloc]: the emulation cannot allocate this class");
  return cls->factory(cls)->self_id();
}

id string_with_cstring(objc_object*, SEL, const char* s, unsigned long) { return make_string(s ? s : ""); }
id array_with_object(objc_object*, SEL, const void* o) {
  return (new NSArrayEmu({from_id(o)}))->autorelease()->self_id();
}
id array_with_objects(objc_object*, SEL, const void* const* objects, unsigned long n) {
  std::vector<EmuObject*> items;
  for (unsigned long i = 0; i < n; ++i) items.push_back(from_id(objects[i]));
  return (new NSArrayEmu(std::move(items)))->autorelease()->self_id();
}
id url_with_path(objc_object*, SEL, const void* path) {
  return (new NSURLEmu(string_of(path)))->autorelease()->self_id();
}
id process_info(objc_object*, SEL) {
  static NSProcessInfoEmu* info = new NSProcessInfoEmu;  // a singleton, never released
  return info->self_id();
}

template <class T>
EmuObject* alloc_plain(EmuClass* cls) {
  return new T(cls);
}

}  // namespace

// --- public classes ---------------------------------------------------------------------------

NSStringEmu::NSStringEmu(std::string s) : EmuObject(emu_class_named("NSString")), s_(std::move(s)) {}
bool NSStringEmu::equals(const void* other) {
  auto* o = dynamic_cast<NSStringEmu*>(from_id(other));
  return o && o->s_ == s_;
}

NSArrayEmu::NSArrayEmu(std::vector<EmuObject*> items) : EmuObject(emu_class_named("NSArray")), items_(std::move(items)) {
  for (EmuObject* o : items_) o->retain();
}
EmuObject* NSArrayEmu::at(unsigned long i) {
  if (i >= items_.size())
    violation("-[NSArray objectAtIndex:]: index " + std::to_string(i) + " beyond bounds [0 .. " +
              std::to_string(items_.size()) + ")");
  return items_[i];
}
void NSArrayEmu::dealloc() {
  for (EmuObject* o : items_) o->release();
  items_.clear();
}

NSErrorEmu::NSErrorEmu(std::string message, std::string domain, long code)
    : EmuObject(emu_class_named("NSError")), description_(new NSStringEmu(std::move(message)), /*adopt=*/true),
      domain_(new NSStringEmu(std::move(domain)), /*adopt=*/true), code_(code) {}

NSDataEmu::NSDataEmu(std::vector<unsigned char> bytes) : EmuObject(emu_class_named("NSData")), bytes_(std::move(bytes)) {}

id make_string(const std::string& s) { return (new NSStringEmu(s))->autorelease()->self_id(); }

std::string string_of(const void* ns_string) {
  if (!ns_string) return {};
  auto* s = dynamic_cast<NSStringEmu*>(from_id(ns_string));
  if (!s) violation("an NSString was expected");
  return s->str();
}

id make_error(const std::string& message) { return (new NSErrorEmu(message))->autorelease()->self_id(); }

void set_error(void* out_error, const std::string& message) {
  if (out_error) *static_cast<id*>(out_error) = make_error(message);
}

std::string url_path(const void* url) {
  if (!url) return {};
  auto* u = dynamic_cast<NSURLEmu*>(from_id(url));
  if (!u) violation("an NSURL was expected");
  return u->path();
}

void register_foundation() {
  const std::string root = "NSObject";
  add_method(root, "retain", reinterpret_cast<IMP>(&obj_retain));
  add_method(root, "release", reinterpret_cast<IMP>(&obj_release));
  add_method(root, "autorelease", reinterpret_cast<IMP>(&obj_autorelease));
  add_method(root, "retainCount", reinterpret_cast<IMP>(&obj_retain_count));
  add_method(root, "init", reinterpret_cast<IMP>(&obj_init));
  add_method(root, "respondsToSelector:", reinterpret_cast<IMP>(&obj_responds));
  add_method(root, "isEqual:", reinterpret_cast<IMP>(&obj_is_equal));
  add_method(root, "hash", reinterpret_cast<IMP>(&obj_hash));
  add_class_method(root, "alloc", reinterpret_cast<IMP>(&cls_alloc));
  add_class_method(root, "retain", reinterpret_cast<IMP>(&cls_self));
  add_class_method(root, "autorelease", reinterpret_cast<IMP>(&cls_self));
  add_class_method(root, "release", reinterpret_cast<IMP>(&cls_noop));

  emu_class_named("NSString");
  add_method("NSString", "UTF8String", imp<&NSStringEmu::utf8>());
  add_method("NSString", "isEqualToString:", imp<&NSStringEmu::equals>());
  add_class_method("NSString", "stringWithCString:encoding:", reinterpret_cast<IMP>(&string_with_cstring));

  add_method("NSArray", "count", imp<&NSArrayEmu::count>());
  add_method("NSArray", "objectAtIndex:", imp<&NSArrayEmu::object_at>());
  add_class_method("NSArray", "arrayWithObject:", reinterpret_cast<IMP>(&array_with_object));
  add_class_method("NSArray", "arrayWithObjects:count:", reinterpret_cast<IMP>(&array_with_objects));

  emu_class_named("NSDictionary")->factory = &alloc_plain<NSDictionaryEmu>;
  add_method("NSDictionary", "initWithObjects:forKeys:count:", imp<&NSDictionaryEmu::init>());
  add_method("NSDictionary", "objectForKey:", imp<&NSDictionaryEmu::object_for_key>());

  add_method("NSError", "localizedDescription", imp<&NSErrorEmu::localized_description>());
  add_method("NSError", "userInfo", imp<&NSErrorEmu::user_info>());
  add_method("NSError", "domain", imp<&NSErrorEmu::domain>());
  add_method("NSError", "code", imp<&NSErrorEmu::code>());

  add_method("NSData", "length", imp<&NSDataEmu::length>());
  // Immutable: no mutableBytes (NSMutableData's); sending it is an unrecognized selector.
  add_method("NSData", "bytes", imp<&NSDataEmu::bytes>());

  add_method("NSURL", "path", imp<&NSURLEmu::path_string>());
  add_class_method("NSURL", "fileURLWithPath:", reinterpret_cast<IMP>(&url_with_path));

  add_class_method("NSProcessInfo", "processInfo", reinterpret_cast<IMP>(&process_info));
  add_method("NSProcessInfo", "operatingSystemVersionString", imp<&NSProcessInfoEmu::version_string>());
  add_method("NSProcessInfo", "operatingSystemVersion", imp<&NSProcessInfoEmu::version>());
  add_method("NSProcessInfo", "isOperatingSystemAtLeastVersion:", imp<&NSProcessInfoEmu::at_least>());

  emu_class_named("NSAutoreleasePool")->factory = &alloc_plain<NSAutoreleasePoolEmu>;
  add_method("NSAutoreleasePool", "init", imp<&NSAutoreleasePoolEmu::init>());
}

}  // namespace tmps::emu
