// The one translation unit that instantiates metal-cpp's private implementation: the selector,
// class and constant tables every other metal-cpp user refers to. Defining these macros in a
// second TU gives duplicate symbols at link time; forgetting them gives undefined ones
// (tools/macos_check.py checks both on Linux).
//
// Which SDK links it: the pinned metal-cpp (macOS 26, third_party/metal-cpp/) defines each
// framework constant (MTL::TensorDomain, NS::CocoaErrorDomain, ...) from a weak_import extern only
// when the SDK's <AvailabilityVersions.h> defines __MAC_26_0, i.e. with the macOS 26 SDK (its
// Metal.tbd exports every Metal one); at run time on an older macOS a missing one is NULL and the
// constant nullptr. With an older SDK it reads every constant with dlsym when the module loads, so
// the link needs none of them (the macOS 14.5 SDK lacks _MTLTensorDomain and
// _MTLLogStateErrorDomain, 15.5 lacks _MTLTensorDomain). Our code reads only
// MTL::CommonCounterSetTimestamp and MTL::CommandBufferEncoderInfoErrorKey, in every SDK's
// Metal.tbd. tools/macos_check.py compiles this file with each supported SDK's availability macros
// and links it per SDK.
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#define CA_PRIVATE_IMPLEMENTATION

#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>
#include <QuartzCore/QuartzCore.hpp>
