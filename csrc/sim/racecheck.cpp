// The concurrency checks of the simulator, both opt-in (TMPS_CHECK_* of a dispatch): the race
// check of threadgroup memory ($TRITON_MPS_RACECHECK) and the random interleaving of threads
// ($TRITON_MPS_SIM_INTERLEAVE). The runtime services call them at each checked access.
#include "dispatch_state.h"

#include <string>

namespace tmps::sim {

namespace {

// ---- the race check (TMPS_CHECK_RACE) ----------------------------------------------------------
// Threadgroup memory only. Two accesses to a byte conflict when they come from different
// SIMD-groups between the same two threadgroup barriers and one of them is a plain write
// (atomics never conflict). Lanes of one SIMD-group are taken to run in lockstep, as they do
// on Apple GPUs, so conflicts inside a SIMD-group are not reported. A read of a byte no thread
// of the threadgroup has written is reported too: Metal leaves threadgroup memory undefined.

// "[[threadgroup(1)]] byte 12" or "threadgroup variable byte 12": where `off` lies in the arena.
std::string threadgroup_place(const Worker& w, uint64_t off) {
  const auto arena = reinterpret_cast<uintptr_t>(w.arena);
  for (uint32_t n = 0; n < TMPS_SIM_MAX_THREADGROUP_BINDINGS; ++n) {
    if (!w.tg_buffers[n]) continue;
    const uint64_t lo = reinterpret_cast<uintptr_t>(w.tg_buffers[n]) - arena;
    if (off >= lo && off < lo + w.d->spec->threadgroup_lengths[n])
      return "[[threadgroup(" + std::to_string(n) + ")]] memory at byte " + std::to_string(off - lo);
  }
  uint64_t best = 0;
  bool found = false;
  for (const auto& st : w.statics) {  // the static starting last at or before `off`
    const uint64_t lo = reinterpret_cast<uintptr_t>(st.second) - arena;
    if (lo <= off && (!found || lo > best)) best = lo, found = true;
  }
  if (found) return "a threadgroup variable at byte " + std::to_string(off - best);
  return "threadgroup memory at byte " + std::to_string(off);
}

std::string simd_who(uint16_t unit) {
  return unit == kMany ? std::string("other SIMD-groups") : "SIMD-group " + std::to_string(unit - 1);
}

std::string line_or_unknown(const Worker& w, const void* pc) {
  std::string l = SourceOrigins::annotate(source_line_of(pc), w.d->spec->origins);
  return l.empty() ? std::string("an unknown line") : l;
}

[[noreturn]] void report_check(Worker* w, const std::string& what) {
  set_abort(w, ErrorKind::Dispatch,
            "kernel '" + kname(w->d->kernel) + "': " + what + " (race check; TRITON_MPS_RACECHECK=0 turns it off)");
  abort_kernel(w);
}

TgShadow& shadow_of(Worker* w, uint64_t off) {
  TgShadow& s = w->shadow[off];
  if (s.generation != w->generation) {
    s = TgShadow{};
    s.generation = w->generation;
    s.epoch = w->epoch;
  }
  if (s.epoch != w->epoch) {  // a barrier since: earlier accesses no longer conflict
    s.epoch = w->epoch;
    s.writer = s.reader = 0;
  }
  return s;
}

}  // namespace

void check_threadgroup(Worker* w, uint64_t off, uint64_t size, bool write, const void* pc) {
  const auto me = static_cast<uint16_t>(running_index(*w) / kSimd + 1);
  const std::string who = thread_desc(*w) + " (SIMD-group " + std::to_string(me - 1) + ")";
  for (uint64_t i = off; i < off + size; ++i) {
    TgShadow& s = shadow_of(w, i);
    if (!write && !s.written)
      report_check(w, "read of uninitialized threadgroup memory: " + who + " reads " + std::to_string(size) +
                          " byte" + (size == 1 ? "" : "s") + " of " + threadgroup_place(*w, i) + " at " +
                          line_or_unknown(*w, pc) + ", which no thread of the threadgroup has written (Metal leaves it undefined)");
    if (s.writer && s.writer != me)
      report_check(w, "threadgroup memory race: " + who + (write ? " writes " : " reads ") + threadgroup_place(*w, i) +
                          " at " + line_or_unknown(*w, pc) + ", which " + simd_who(s.writer) + " wrote at " +
                          line_or_unknown(*w, s.writer_pc) +
                          " with no threadgroup_barrier between them");
    if (write && s.reader && s.reader != me)
      report_check(w, "threadgroup memory race: " + who + " writes " + threadgroup_place(*w, i) + " at " +
                          line_or_unknown(*w, pc) + ", which " + simd_who(s.reader) + " read at " +
                          line_or_unknown(*w, s.reader_pc) + " with no threadgroup_barrier between them");
    if (write) {
      s.writer = me;
      s.writer_pc = pc;
      s.written = true;
    } else {
      s.reader = (s.reader == 0 || s.reader == me) ? me : kMany;
      s.reader_pc = pc;
    }
  }
}

// An atomic reads its object: it must have been written (atomics never race).
void check_threadgroup_atomic(Worker* w, uint64_t off, uint64_t size, const void* pc) {
  for (uint64_t i = off; i < off + size; ++i)
    if (!shadow_of(w, i).written)
      report_check(w, "atomic on uninitialized threadgroup memory: " + thread_desc(*w) + " at " + line_or_unknown(*w, pc) +
                          " updates " + threadgroup_place(*w, i) +
                          ", which no thread of the threadgroup has written (Metal leaves it undefined)");
}

// ---- interleaving (TMPS_CHECK_INTERLEAVE) --------------------------------------------------------
// At every device or threadgroup memory access and atomic, the running thread gives way with
// probability 1/2; the scheduler then resumes a runnable thread of the threadgroup chosen at
// random. Seeded per dispatch and threadgroup, so a failing schedule repeats.

uint64_t next_random(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void maybe_yield(Worker* w) {
  if (!w->fiber_mode || !(next_random(w->rng) & 1)) return;
  block(w);  // still Runnable: the scheduler picks who runs next
  if (cancelled(*w->d)) stop_kernel(w);
}

}  // namespace tmps::sim
