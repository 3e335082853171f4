// Stand-in for <CoreGraphics/CGGeometry.h> (tools/macos_check.py only; see
// CoreFoundation/CoreFoundation.h). QuartzCore's CAMetalLayer uses CGSize by value, so the
// layout must match Apple's: CGFloat is double on 64-bit targets.
#pragma once

typedef double CGFloat;
struct CGPoint { CGFloat x; CGFloat y; };
struct CGSize { CGFloat width; CGFloat height; };
struct CGRect { struct CGPoint origin; struct CGSize size; };
typedef struct CGPoint CGPoint;
typedef struct CGSize CGSize;
typedef struct CGRect CGRect;
