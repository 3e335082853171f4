// Stand-in for <CoreGraphics/CGColorSpace.h> (tools/macos_check.py only; see
// CoreFoundation/CoreFoundation.h). Only the opaque reference type is used.
#pragma once

typedef struct CGColorSpace* CGColorSpaceRef;
