// Stand-in for <IOSurface/IOSurfaceRef.h> (tools/macos_check.py only; see CoreFoundation.h).
// metal-cpp only passes IOSurfaceRef through texture APIs we never call.
#pragma once

typedef struct __IOSurface* IOSurfaceRef;
