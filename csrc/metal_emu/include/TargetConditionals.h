// Stand-in for <TargetConditionals.h> on Linux (csrc/metal_emu/): the emulation presents itself
// as macOS to metal-cpp's conditionals.
#pragma once

#define TARGET_OS_OSX 1
#define TARGET_OS_MAC 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_TV 0
#define TARGET_OS_WATCH 0
#define TARGET_OS_VISION 0
#define TARGET_OS_SIMULATOR 0
