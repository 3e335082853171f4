// Fiber context switch for AArch64 (AAPCS64; Linux and macOS).
// void tmps_sim_fiber_switch(void** save_sp /*x0*/, void* to_sp /*x1*/)
// Saves x19-x28, fp (x29), lr (x30), d8-d15 and FPCR on the current stack; layout must match
// fiber_prepare() in fiber.cpp. x18 is left alone (platform register on macOS).
#if defined(__APPLE__)
#define SYM(x) _##x
#else
#define SYM(x) x
#endif

        .text
        .globl SYM(tmps_sim_fiber_switch)
        .globl SYM(tmps_sim_fiber_start)
#if !defined(__APPLE__)
        .type tmps_sim_fiber_switch, %function
        .type tmps_sim_fiber_start, %function
#endif
        .p2align 4
SYM(tmps_sim_fiber_switch):
        sub sp, sp, #176
        stp x19, x20, [sp, #0]
        stp x21, x22, [sp, #16]
        stp x23, x24, [sp, #32]
        stp x25, x26, [sp, #48]
        stp x27, x28, [sp, #64]
        stp x29, x30, [sp, #80]
        stp d8, d9, [sp, #96]
        stp d10, d11, [sp, #112]
        stp d12, d13, [sp, #128]
        stp d14, d15, [sp, #144]
        mrs x9, fpcr
        str x9, [sp, #160]
        mov x9, sp
        str x9, [x0]
        mov sp, x1
        ldp x19, x20, [sp, #0]
        ldp x21, x22, [sp, #16]
        ldp x23, x24, [sp, #32]
        ldp x25, x26, [sp, #48]
        ldp x27, x28, [sp, #64]
        ldp x29, x30, [sp, #80]
        ldp d8, d9, [sp, #96]
        ldp d10, d11, [sp, #112]
        ldp d12, d13, [sp, #128]
        ldp d14, d15, [sp, #144]
        ldr x9, [sp, #160]
        mrs x10, fpcr
        cmp x9, x10
        b.eq 1f
        msr fpcr, x9            // writing FPCR can be slow: only when it differs
1:      add sp, sp, #176
        ret

// First entry of a fresh fiber: x19 = fn, x20 = arg (from the initial frame). fn never returns.
        .p2align 4
SYM(tmps_sim_fiber_start):
        mov x0, x20
        blr x19
        brk #0

#if !defined(__APPLE__)
        .size tmps_sim_fiber_switch, . - tmps_sim_fiber_switch
        .section .note.GNU-stack,"",%progbits
#endif
