// Stand-in for <CoreFoundation/CoreFoundation.h> on Linux (csrc/metal_emu/): only the types
// metal-cpp uses (CFTimeInterval, a few Ref types) and the headers it relies on transitively.
#pragma once

#include <TargetConditionals.h>
#include <dispatch/dispatch.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef double CFTimeInterval;
typedef signed long CFIndex;
typedef const struct __CFString* CFStringRef;
typedef const void* CFTypeRef;
