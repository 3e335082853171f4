// Stand-in for <CoreGraphics/CGColorSpace.h> on Linux (csrc/metal_emu/).
#pragma once

typedef struct CGColorSpace* CGColorSpaceRef;
