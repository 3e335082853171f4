// Stand-in for Apple's CoreFoundation umbrella header, used ONLY by tools/macos_check.py to
// compile metal-cpp on Linux (zig ships Darwin libc/objc/dispatch/mach headers but no
// frameworks). A real Mac build uses the SDK's header instead.
//
// metal-cpp needs from it: CFTimeInterval, the CFSTR builtin spelling, and the C headers the
// real umbrella pulls in transitively (metal-cpp relies on math.h and dispatch through it).
#pragma once

#include <TargetConditionals.h>
#include <dispatch/dispatch.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef double CFTimeInterval;
typedef signed long CFIndex;
typedef const struct __CFString* CFStringRef;
typedef const void* CFTypeRef;

void CFRelease(CFTypeRef cf);
CFTypeRef CFRetain(CFTypeRef cf);

#ifdef __cplusplus
}
#endif

// Same spelling as CFString.h: the compiler builds the constant string object itself.
#define __CFStringMakeConstantString(cStr) __builtin___CFStringMakeConstantString(cStr)
#define CFSTR(cStr) __CFStringMakeConstantString("" cStr "")
