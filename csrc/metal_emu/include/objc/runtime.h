// Stand-in for <objc/runtime.h> on Linux (the emulated Metal runtime, csrc/metal_emu/).
// Only what metal-cpp and csrc/metal/ use. The runtime behind it is csrc/metal_emu/objc_runtime.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct objc_class* Class;
typedef struct objc_object* id;

// As in Apple's runtime, every object and class starts with its class pointer.
struct objc_object {
  Class isa;
};
struct objc_class {
  Class isa;
};
typedef const struct objc_selector* SEL;
typedef struct objc_object Protocol;
typedef void (*IMP)(void);
typedef signed char BOOL;

SEL sel_registerName(const char* name);
const char* sel_getName(SEL sel);
id objc_lookUpClass(const char* name);
Protocol* objc_getProtocol(const char* name);
Class object_getClass(id obj);
const char* class_getName(Class cls);
BOOL class_respondsToSelector(Class cls, SEL sel);

#ifdef __cplusplus
}
#endif
