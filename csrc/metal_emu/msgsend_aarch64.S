// objc_msgSend for the emulated Objective-C runtime, AArch64 (AAPCS64, Linux).
// Saves x0-x8 (x8: indirect result location) and q0-q7, asks tmps_emu_lookup(x0, x1) for the
// method, restores them and branches through x16 (IP0), so the method returns straight to the
// caller. metal-cpp is compiled with __arm64__ defined on aarch64 Linux, so structs come back
// through x8 and objc_msgSend_stret is never used; it is provided (receiver in x1) for
// completeness. NOT YET EXERCISED: CI runs on x86-64 only.
    .text

    .macro TRAMPOLINE name, self, sel
    .globl \name
    .type \name, %function
    .p2align 4
\name:
    .cfi_startproc
    stp x29, x30, [sp, #-224]!
    .cfi_def_cfa_offset 224
    .cfi_offset x29, -224
    .cfi_offset x30, -216
    mov x29, sp
    stp x0, x1, [sp, #16]
    stp x2, x3, [sp, #32]
    stp x4, x5, [sp, #48]
    stp x6, x7, [sp, #64]
    str x8, [sp, #80]
    stp q0, q1, [sp, #96]
    stp q2, q3, [sp, #128]
    stp q4, q5, [sp, #160]
    stp q6, q7, [sp, #192]
    mov x0, \self
    mov x1, \sel
    bl tmps_emu_lookup
    mov x16, x0
    ldp x0, x1, [sp, #16]
    ldp x2, x3, [sp, #32]
    ldp x4, x5, [sp, #48]
    ldp x6, x7, [sp, #64]
    ldr x8, [sp, #80]
    ldp q0, q1, [sp, #96]
    ldp q2, q3, [sp, #128]
    ldp q4, q5, [sp, #160]
    ldp q6, q7, [sp, #192]
    ldp x29, x30, [sp], #224
    .cfi_def_cfa_offset 0
    br x16
    .cfi_endproc
    .size \name, . - \name
    .endm

    TRAMPOLINE objc_msgSend, x0, x1
    TRAMPOLINE objc_msgSend_fpret, x0, x1
    TRAMPOLINE objc_msgSend_stret, x1, x2

    .section .note.GNU-stack,"",@progbits
