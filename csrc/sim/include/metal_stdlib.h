// MSL header <metal_stdlib.h>: the whole simulator shim lives in tmps_metal.h.
#ifndef TMPS_PUBLIC_METAL_STDLIB_H
#define TMPS_PUBLIC_METAL_STDLIB_H
#include "tmps_metal.h"
#endif
