// objc_msgSend for the emulated Objective-C runtime, x86-64 System V (Linux).
// metal-cpp casts objc_msgSend to the exact signature of each message; this trampoline saves
// every argument register (integer, vector, %al for varargs), asks tmps_emu_lookup for the
// method, restores them and jumps: the method then runs as if called directly, returning
// through the original caller. _stret: the struct-return pointer comes first (%rdi), so the
// receiver and selector are in %rsi and %rdx. _fpret: identical to objc_msgSend for double.
    .text

    .macro TRAMPOLINE name, self, sel
    .globl \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $192, %rsp
    movq %rdi, 0(%rsp)
    movq %rsi, 8(%rsp)
    movq %rdx, 16(%rsp)
    movq %rcx, 24(%rsp)
    movq %r8, 32(%rsp)
    movq %r9, 40(%rsp)
    movq %rax, 48(%rsp)
    movdqu %xmm0, 64(%rsp)
    movdqu %xmm1, 80(%rsp)
    movdqu %xmm2, 96(%rsp)
    movdqu %xmm3, 112(%rsp)
    movdqu %xmm4, 128(%rsp)
    movdqu %xmm5, 144(%rsp)
    movdqu %xmm6, 160(%rsp)
    movdqu %xmm7, 176(%rsp)
    movq \self, %rdi
    movq \sel, %rsi
    call tmps_emu_lookup
    movq %rax, %r11
    movq 0(%rsp), %rdi
    movq 8(%rsp), %rsi
    movq 16(%rsp), %rdx
    movq 24(%rsp), %rcx
    movq 32(%rsp), %r8
    movq 40(%rsp), %r9
    movq 48(%rsp), %rax
    movdqu 64(%rsp), %xmm0
    movdqu 80(%rsp), %xmm1
    movdqu 96(%rsp), %xmm2
    movdqu 112(%rsp), %xmm3
    movdqu 128(%rsp), %xmm4
    movdqu 144(%rsp), %xmm5
    movdqu 160(%rsp), %xmm6
    movdqu 176(%rsp), %xmm7
    leave
    .cfi_def_cfa %rsp, 8
    jmp *%r11
    .cfi_endproc
    .size \name, . - \name
    .endm

    TRAMPOLINE objc_msgSend, 0(%rsp), 8(%rsp)
    TRAMPOLINE objc_msgSend_fpret, 0(%rsp), 8(%rsp)
    TRAMPOLINE objc_msgSend_stret, 8(%rsp), 16(%rsp)

    .section .note.GNU-stack,"",@progbits
