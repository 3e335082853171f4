// Stand-in for <CoreGraphics/CGGeometry.h> on Linux (csrc/metal_emu/).
#pragma once

typedef double CGFloat;
struct CGPoint { CGFloat x; CGFloat y; };
struct CGSize { CGFloat width; CGFloat height; };
struct CGRect { struct CGPoint origin; struct CGSize size; };
typedef struct CGPoint CGPoint;
typedef struct CGSize CGSize;
typedef struct CGRect CGRect;
