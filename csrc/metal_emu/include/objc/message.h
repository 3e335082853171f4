// Stand-in for <objc/message.h> on Linux (csrc/metal_emu/). The entry points are assembly
// trampolines (msgsend_x86_64.S / msgsend_aarch64.S): they look the method up and jump to it
// with every argument register intact, so one symbol serves every signature metal-cpp casts it to.
#pragma once

#include <objc/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

void objc_msgSend(void);
void objc_msgSend_stret(void);
void objc_msgSend_fpret(void);

#ifdef __cplusplus
}
#endif
