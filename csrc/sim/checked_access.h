// Checked accesses for memcheck (issue 29): loads and stores through pointers in a kernel's
// body, rewritten to the shim's TMPS_MC_LOAD(p) / TMPS_MC_STORE(p) (tmps_metal_memcheck.h).
//
// Memcheck compiles kernels with AddressSanitizer's outline instrumentation: every access
// calls the shim, which walks the dispatch's ranges. The macros instead check inline against
// the range the same access site matched last time (a hint per site) and call out only when
// that fails; the access itself goes through a pointer AddressSanitizer does not instrument.
// What is allowed and what is reported is unchanged: a miss takes the same path as the
// instrumented access (same line, size and message), and the race check, counters and
// interleaving still see every access they saw (their ranges never match inline).
//
// Only forms whose meaning is plain are rewritten: `*p`, `p[i]` and `*(T*)(e)` where p is
// declared a pointer to (`*p` also: an array of pointers to) a number or a number vector of 2
// or 4, as the whole left side of an assignment (`*p = v;`) or as a value (`x = *p;`,
// `c ? *p : 0`, `*p + 1`), never bound to a reference or passed whole to a function (which
// might take it by reference). Everything else (p->f, struct or 3-vector accesses, compound
// assignments, pointers of unknown type) keeps AddressSanitizer's instrumentation.
#pragma once

#include <string>
#include <vector>

namespace tmps {

// `text` with the accesses in the bodies of the functions named `functions` (definitions
// `void NAME(...) {...}`; a name not defined exactly once is left alone) rewritten. Line
// breaks are kept, so #line directives and line numbers stay right. `sites` (if given) gets
// the number of accesses rewritten.
std::string check_accesses(const std::string& text, const std::vector<std::string>& functions, size_t* sites = nullptr);

}  // namespace tmps
