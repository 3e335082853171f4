// Emulated Foundation objects (NSString, NSArray, NSDictionary, NSError, NSURL, NSData,
// NSProcessInfo, NSAutoreleasePool): exactly the selectors csrc/metal/ and metal-cpp use.
#pragma once

#include <string>
#include <vector>

#include "metal_emu/objc_runtime.h"

namespace tmps::emu {

// A strong reference to an emulated object (retain on copy, release on destruction).
template <class T>
class Strong {
 public:
  Strong() = default;
  explicit Strong(T* p, bool adopt = false) : p_(p) {
    if (p_ && !adopt) p_->retain();
  }
  Strong(const Strong& o) : Strong(o.p_) {}
  Strong& operator=(Strong o) {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Strong() {
    if (p_) p_->release();
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

class NSStringEmu : public EmuObject {
 public:
  explicit NSStringEmu(std::string s);
  const std::string& str() const { return s_; }
  const char* utf8() { return s_.c_str(); }
  bool equals(const void* other);

 private:
  std::string s_;
};

class NSArrayEmu : public EmuObject {
 public:
  explicit NSArrayEmu(std::vector<EmuObject*> items);  // retains each
  unsigned long count() { return items_.size(); }
  EmuObject* at(unsigned long i);
  id object_at(unsigned long i) { return at(i)->self_id(); }

 protected:
  void dealloc() override;

 private:
  std::vector<EmuObject*> items_;
};

class NSErrorEmu : public EmuObject {
 public:
  explicit NSErrorEmu(std::string message, std::string domain = "", long code = 0);
  id localized_description() { return description_.get()->self_id(); }
  id user_info() { return nullptr; }
  id domain() { return domain_.get()->self_id(); }
  long code() { return code_; }

 private:
  Strong<NSStringEmu> description_;
  Strong<NSStringEmu> domain_;
  long code_;
};

class NSDataEmu : public EmuObject {
 public:
  explicit NSDataEmu(std::vector<unsigned char> bytes);
  unsigned long length() { return bytes_.size(); }
  const void* bytes() { return bytes_.data(); }

 private:
  std::vector<unsigned char> bytes_;
};

// Helpers for the Metal objects: autoreleased new objects, as Cocoa's convenience methods return.
id make_string(const std::string& s);  // autoreleased
std::string string_of(const void* ns_string);  // "" for nil
id make_error(const std::string& message);  // autoreleased, for NSError** out-parameters
void set_error(void* out_error, const std::string& message);  // *out = autoreleased error, if out

std::string url_path(const void* ns_url);     // "" for nil

void register_foundation();

}  // namespace tmps::emu
