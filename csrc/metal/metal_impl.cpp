// The one translation unit that instantiates metal-cpp's private implementation: the selector,
// class and constant tables every other metal-cpp user refers to. Defining these macros in a
// second TU gives duplicate symbols at link time; forgetting them gives undefined ones
// (tools/macos_check.py checks both on Linux).
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#define CA_PRIVATE_IMPLEMENTATION

#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>
#include <QuartzCore/QuartzCore.hpp>
