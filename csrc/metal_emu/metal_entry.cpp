// The C entry points and constants of Metal.framework that metal-cpp links against, for the
// emulated runtime: MTLCreateSystemDefaultDevice and friends, and the string constants our code
// compares with. The emulated GPU's name: TRITON_MPS_EMU_CHIP (default "Apple M4 Max"), always
// suffixed "(emulated)".
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>

#include "metal_emu/foundation.h"
#include "metal_emu/metal_objects.h"

namespace tmps::emu {
void ensure_classes();
}

using namespace tmps::emu;

namespace {
// Constant NSStrings must exist before any static initializer reads them (metal-cpp copies
// them into MTL::* during static initialization): their addresses are link-time constants,
// the objects are constructed in place on first use of the runtime.
alignas(16) unsigned char g_const_storage[2][sizeof(NSStringEmu)];
}  // namespace

extern "C" NS::String* const MTLCommonCounterSetTimestamp =
    reinterpret_cast<NS::String*>(g_const_storage[0] + sizeof(void*));
extern "C" NS::String* const MTLCommandBufferEncoderInfoErrorKey =
    reinterpret_cast<NS::String*>(g_const_storage[1] + sizeof(void*));

namespace tmps::emu {
void construct_constant_strings() {
  const char* texts[2] = {"timestamp", "MTLCommandBufferEncoderInfoErrorKey"};
  NS::String* const* names[2] = {&MTLCommonCounterSetTimestamp, &MTLCommandBufferEncoderInfoErrorKey};
  for (int i = 0; i < 2; ++i) {
    auto* s = new (g_const_storage[i]) NSStringEmu(texts[i]);
    if (static_cast<void*>(s->self_id()) != static_cast<void*>(*names[i])) {
      std::fprintf(stderr, "metal_emu: unexpected object layout for constant strings\n");
      std::abort();
    }
    s->retain();  // constants are never deallocated
  }
}
}  // namespace tmps::emu

extern "C" {

MTL::Device* MTLCreateSystemDefaultDevice() {
  ensure_classes();
  static id device = [] {
    const char* chip = std::getenv("TRITON_MPS_EMU_CHIP");
    std::string name = std::string(chip && *chip ? chip : "Apple M4 Max") + " (emulated)";
    return new_emulated_device(name, 0x100000001ull);
  }();
  from_id(device)->retain();  // "Create": +1 for the caller
  return reinterpret_cast<MTL::Device*>(device);
}

NS::Array* MTLCopyAllDevices() {
  id device = reinterpret_cast<id>(MTLCreateSystemDefaultDevice());
  auto* array = new NSArrayEmu({from_id(device)});
  from_id(device)->release();
  return reinterpret_cast<NS::Array*>(array->self_id());
}

NS::Array* MTLCopyAllDevicesWithObserver(void*, void*) { return MTLCopyAllDevices(); }
void MTLRemoveDeviceObserver(const void*) {}

}  // extern "C"
