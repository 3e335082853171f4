// Fiber context switch for x86-64 System V (Linux, macOS).
// void tmps_sim_fiber_switch(void** save_sp /*rdi*/, void* to_sp /*rsi*/)
// Saves rbp, rbx, r12-r15 on the current stack; layout must match fiber_prepare() in fiber.cpp.
// MXCSR and the x87 control word (callee-saved under the SysV ABI too) are not switched: every
// fiber of a worker runs with the worker's, which nothing changes during a dispatch (kernel code
// has no inline assembly and imports no fenv functions: host_imports.cpp). Saving and restoring
// them was three quarters of a switch (stmxcsr/ldmxcsr and fnstcw/fldcw are microcoded; perf
// annotate over a cumsum run). The 8-byte slot they used stays, keeping the frame's layout.
#if defined(__APPLE__)
#define SYM(x) _##x
#else
#define SYM(x) x
#endif

        .text
        .globl SYM(tmps_sim_fiber_switch)
        .globl SYM(tmps_sim_fiber_start)
#if !defined(__APPLE__)
        .type tmps_sim_fiber_switch, @function
        .type tmps_sim_fiber_start, @function
#endif
        .p2align 4
SYM(tmps_sim_fiber_switch):
        pushq %rbp
        pushq %rbx
        pushq %r12
        pushq %r13
        pushq %r14
        pushq %r15
        subq $8, %rsp
        movq %rsp, (%rdi)
        movq %rsi, %rsp
        addq $8, %rsp
        popq %r15
        popq %r14
        popq %r13
        popq %r12
        popq %rbx
        popq %rbp
        ret

// First entry of a fresh fiber: r12 = fn, r13 = arg (from the initial frame). fn never returns.
        .p2align 4
SYM(tmps_sim_fiber_start):
        movq %r13, %rdi
        callq *%r12
        ud2

#if !defined(__APPLE__)
        .size tmps_sim_fiber_switch, . - tmps_sim_fiber_switch
        .section .note.GNU-stack,"",@progbits
#endif
