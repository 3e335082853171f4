// Stand-in for <IOSurface/IOSurfaceRef.h> on Linux (csrc/metal_emu/).
#pragma once

typedef struct __IOSurface* IOSurfaceRef;
