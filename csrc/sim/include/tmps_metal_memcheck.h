// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Memcheck: with TMPS_SIM_MEMCHECK the kernel is compiled with clang's AddressSanitizer
// instrumentation in outline mode (-fsanitize=address, one call per load and store) and no
// ASan runtime: these definitions receive the calls and ask the simulator runtime whether
// the access lies inside memory the kernel may touch (a bound buffer, this threadgroup's
// memory, the thread's own stack, ...). A bad access aborts the dispatch before it happens.
// The plain loads and stores of a kernel's body skip the call when they hit the range they hit
// last (TMPS_MC_LOAD/STORE below, written by the simulator's translation: checked_access.h).
// The callbacks themselves are not instrumented. The return address identifies the access
// for the error message (the runtime maps it to the MSL line).
// They are compiled once into the simulator's support object (TMPS_SIM_SUPPORT, see
// sim_compiler.cpp), which every kernel library links, not into each kernel: a kernel's own
// translation unit only calls them.
#ifndef TMPS_METAL_MEMCHECK_H
#define TMPS_METAL_MEMCHECK_H

#if defined(TMPS_SIM_SUPPORT) && defined(TMPS_SIM_MEMCHECK) && TMPS_SIM_MEMCHECK && !defined(TMPS_SIM_STRICT)

// Set by the runtime for the duration of a dispatch (one dispatch per library at a time).
extern "C" __attribute__((visibility("default"))) const tmps_sim_memcheck* tmps_sim_mc = 0;

// The common case without leaving the kernel library: inside a bound buffer, no stop request.
__attribute__((no_sanitize("address"), visibility("hidden"), always_inline)) inline bool tmps_mc_fast(
    __UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n) {
  const tmps_sim_memcheck* m = tmps_sim_mc;
  if (!m || m->stop || *m->interrupts != m->interrupts_at_start) return false;
  if (m->stack_mask) {  // the running fiber's live stack (tmps_sim_abi.h)
    const __UINTPTR_TYPE__ f = (__UINTPTR_TYPE__)__builtin_frame_address(0);
    if (a >= f && n && ((a + n - 1) | m->stack_mask) == (f | m->stack_mask)) return true;
  }
  for (tmps_u32 i = 0; i < m->count; ++i)
    if (a >= m->lo[i] && a < m->hi[i] && n <= m->hi[i] - a) return true;
  return false;
}

#define TMPS_MC_FN extern "C" __attribute__((no_sanitize("address"), visibility("hidden"), used, noinline))
// No runtime, or one without check_access (a test's stand-in table): nothing is checked.
#define TMPS_MC_CHECK(addr, size, write)                                                             \
  do {                                                                                               \
    if (!tmps_mc_fast((__UINTPTR_TYPE__)(addr), (__UINTPTR_TYPE__)(size)) && tmps_sim_rt && tmps_sim_rt->check_access) \
      tmps_sim_rt->check_access((const void*)(addr), (tmps_u64)(size), (write), __builtin_return_address(0)); \
  } while (0)

#define TMPS_MC_SIZED(n)                                                              \
  TMPS_MC_FN void __asan_load##n(__UINTPTR_TYPE__ a) { TMPS_MC_CHECK(a, n, 0u); }     \
  TMPS_MC_FN void __asan_store##n(__UINTPTR_TYPE__ a) { TMPS_MC_CHECK(a, n, 1u); }
TMPS_MC_SIZED(1)
TMPS_MC_SIZED(2)
TMPS_MC_SIZED(4)
TMPS_MC_SIZED(8)
TMPS_MC_SIZED(16)
#undef TMPS_MC_SIZED
TMPS_MC_FN void __asan_loadN(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n) { TMPS_MC_CHECK(a, n, 0u); }
TMPS_MC_FN void __asan_storeN(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n) { TMPS_MC_CHECK(a, n, 1u); }

// Memory intrinsics (struct copies, memset of arrays): both sides checked, then done here
// (as a memmove, which also serves memcpy). `pc` is the instrumented call's return address.
__attribute__((no_sanitize("address"), visibility("hidden"), always_inline)) inline void* tmps_mc_move(
    void* d, const void* s, __SIZE_TYPE__ n, const void* pc) {
  if (n && tmps_sim_rt && tmps_sim_rt->check_access) {
    if (!tmps_mc_fast((__UINTPTR_TYPE__)s, n)) tmps_sim_rt->check_access(s, n, 0u, pc);
    if (!tmps_mc_fast((__UINTPTR_TYPE__)d, n)) tmps_sim_rt->check_access(d, n, 1u, pc);
  }
  unsigned char* dp = (unsigned char*)d;
  const unsigned char* sp = (const unsigned char*)s;
  if (dp < sp)
    for (__SIZE_TYPE__ i = 0; i < n; ++i) dp[i] = sp[i];
  else
    for (__SIZE_TYPE__ i = n; i > 0; --i) dp[i - 1] = sp[i - 1];
  return d;
}
TMPS_MC_FN void* __asan_memcpy(void* d, const void* s, __SIZE_TYPE__ n) {
  return tmps_mc_move(d, s, n, __builtin_return_address(0));
}
TMPS_MC_FN void* __asan_memmove(void* d, const void* s, __SIZE_TYPE__ n) {
  return tmps_mc_move(d, s, n, __builtin_return_address(0));
}
TMPS_MC_FN void* __asan_memset(void* d, int c, __SIZE_TYPE__ n) {
  if (n) TMPS_MC_CHECK(d, n, 1u);
  unsigned char* dp = (unsigned char*)d;
  for (__SIZE_TYPE__ i = 0; i < n; ++i) dp[i] = (unsigned char)c;
  return d;
}
// Whether [a, a + n) passes the fast check, without a report (a whole simdgroup_matrix load or
// store of a collapsed kernel, tmps_metal_matrix.h: unchecked copy if so). Never with the race
// check or interleaving on: their accesses must reach the runtime.
TMPS_MC_FN bool tmps_mc_probe(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n) {
  const tmps_sim_memcheck* m = tmps_sim_mc;
  return m && !m->checks && tmps_mc_fast(a, n);
}
// A checked access's miss (TMPS_MC_LOAD/STORE below): the range it lies in becomes the site's
// hint, or, outside every range (the stack, a runtime structure, a bad access), the same
// check as an instrumented access, reported at the kernel's call site.
TMPS_MC_FN void tmps_mc_refill(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n, unsigned write, unsigned char* hint) {
  const tmps_sim_memcheck* m = tmps_sim_mc;
  if (m && !m->stop && *m->interrupts == m->interrupts_at_start)
    for (tmps_u32 i = 0; i < m->count; ++i)
      if (a >= m->lo[i] && a < m->hi[i] && n <= m->hi[i] - a) {
        __atomic_store_n(hint, (unsigned char)i, __ATOMIC_RELAXED);
        return;
      }
  TMPS_MC_CHECK(a, n, write);
}
// Called before a noreturn call (the runtime's fail()): nothing to unpoison here.
TMPS_MC_FN void __asan_handle_no_return(void) {}

// Atomic read-modify-writes and compare-and-swaps are not instrumented (-asan-instrument-
// atomics=0: they must not count as plain accesses for the race check); the shim's atomic
// functions call this instead. Out of line (and not instrumented itself) so the return address
// is the atomic's call site.
TMPS_MC_FN void tmps_mc_atomic(const void* a, __SIZE_TYPE__ n) {
  const tmps_sim_memcheck* m = tmps_sim_mc;
  if (m && !m->checks && tmps_mc_fast((__UINTPTR_TYPE__)a, n)) return;
  if (tmps_sim_rt && tmps_sim_rt->atomic_access) tmps_sim_rt->atomic_access(a, n, __builtin_return_address(0));
}
#define TMPS_ATOMIC_HOOK(p, n) tmps_mc_atomic((const void*)(__UINTPTR_TYPE__)(p), (n))

#undef TMPS_MC_CHECK
#undef TMPS_MC_FN
#endif
#if !defined(TMPS_SIM_SUPPORT) && defined(TMPS_SIM_MEMCHECK) && TMPS_SIM_MEMCHECK && !defined(TMPS_SIM_STRICT)
// A kernel's translation unit: the hook is defined in the support object it links (above).
extern "C" __attribute__((visibility("hidden"))) void tmps_mc_atomic(const void* a, __SIZE_TYPE__ n);
#define TMPS_ATOMIC_HOOK(p, n) tmps_mc_atomic((const void*)(__UINTPTR_TYPE__)(p), (n))

#if defined(__OPTIMIZE__)
// Checked accesses (sim/checked_access.h: the simulator's translation writes TMPS_MC_LOAD(p)
// for a plain `*p` read and TMPS_MC_STORE(p) for a plain `*p = v`). Inline: the access lies in
// the dispatch range this site matched last (its hint) and no stop is requested; else the
// support object's tmps_mc_refill, which reports as an instrumented access would. The
// access and the check's own reads go through address space 1, which AddressSanitizer does
// not instrument (on these targets it is ordinary memory). Hints are per site (a counter
// modulo 4096: a shared hint only costs misses), written only with valid range indices; the
// runtime zeroes unused ranges, so a stale hint misses.
extern "C" __attribute__((visibility("default"))) const tmps_sim_memcheck* tmps_sim_mc;
// nomerge: each site keeps its own call, whose return address names its MSL line (merged
// calls of several sites have none).
extern "C" __attribute__((visibility("hidden"), nomerge)) void tmps_mc_refill(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n,
                                                                              unsigned write, unsigned char* hint);
#define TMPS_MC_AS __attribute__((address_space(1)))
namespace tmps_sim {
static unsigned char mc_hints[4096];
__attribute__((always_inline)) inline void* mc_at(const void* p, __SIZE_TYPE__ n, unsigned write, unsigned char* hint) {
  typedef TMPS_MC_AS const tmps_sim_memcheck table;
  table* m = *(table* TMPS_MC_AS*)(void*)&tmps_sim_mc;
  const __UINTPTR_TYPE__ a = (__UINTPTR_TYPE__)p;
  const unsigned i = __atomic_load_n((TMPS_MC_AS unsigned char*)hint, __ATOMIC_RELAXED);
  if (__builtin_expect(!m || a < m->lo[i] || a + n > m->hi[i] || m->stop ||
                           *(TMPS_MC_AS const volatile tmps_u32*)m->interrupts != m->interrupts_at_start, 0))
    tmps_mc_refill(a, n, write, hint);
  return (void*)p;
}
// Only numbers and number vectors of 2 or 4 reach these (checked_access.cpp), whose natural
// alignment a template keeps.
template <class T>
__attribute__((always_inline)) inline __remove_cv(T) mc_load(T* p, unsigned char* hint) {
  return *(TMPS_MC_AS T*)::tmps_sim::mc_at((const void*)p, sizeof(T), 0u, hint);
}
template <class T>
__attribute__((always_inline)) inline TMPS_MC_AS T& mc_store(T* p, unsigned char* hint) {
  return *(TMPS_MC_AS T*)::tmps_sim::mc_at((const void*)p, sizeof(T), 1u, hint);
}
}  // namespace tmps_sim
#define TMPS_MC_LOAD(p) ::tmps_sim::mc_load((p), ::tmps_sim::mc_hints + (__COUNTER__ & 4095))
#define TMPS_MC_STORE(p) ::tmps_sim::mc_store((p), ::tmps_sim::mc_hints + (__COUNTER__ & 4095))
#endif  // __OPTIMIZE__
#endif
// Without memcheck, and in -O0 builds (the quick tier, TRITON_MPS_SIM_OPT: kernels that have
// not run long), the plain access: the inline check costs build time (measured 15-25% more
// compiler time per kernel) that pays only in kernels that run long, which the tier rebuilds
// at -O2; at -O0 AddressSanitizer's calls check the access.
#ifndef TMPS_MC_LOAD
#define TMPS_MC_LOAD(p) (*(p))
#define TMPS_MC_STORE(p) (*(p))
#endif
#ifndef TMPS_ATOMIC_HOOK
#define TMPS_ATOMIC_HOOK(p, n) ((void)0)
#endif
#endif
