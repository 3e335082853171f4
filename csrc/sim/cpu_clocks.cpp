// CPU time of worker threads, read from another thread (the watchdog): see cpu_clocks.h.
#include "cpu_clocks.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>

#if defined(__APPLE__)
#include <mach/mach.h>
#endif

namespace tmps::sim {

namespace {

// A handle for reading the calling thread's CPU clock from any thread.
unsigned long long this_thread_handle() {
#if defined(__APPLE__)
  return pthread_mach_thread_np(pthread_self());
#else
  clockid_t id;
  if (pthread_getcpuclockid(pthread_self(), &id) != 0) return ~0ull;
  return static_cast<unsigned long long>(id);
#endif
}

// CPU seconds (user and system) the thread of `handle` used so far; -1 if it cannot be read.
double cpu_seconds(unsigned long long handle) {
#if defined(__APPLE__)
  thread_basic_info_data_t info;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  if (thread_info(static_cast<thread_act_t>(handle), THREAD_BASIC_INFO, reinterpret_cast<thread_info_t>(&info),
                  &count) != KERN_SUCCESS)
    return -1;
  return info.user_time.seconds + info.system_time.seconds +
         (info.user_time.microseconds + info.system_time.microseconds) * 1e-6;
#else
  if (handle == ~0ull) return -1;
  timespec ts;
  if (clock_gettime(static_cast<clockid_t>(handle), &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
#endif
}

}  // namespace

size_t WorkerClocks::enter() {
  Entry e;
  e.thread = this_thread_handle();
  e.start = cpu_seconds(e.thread);
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(e);
  return entries_.size() - 1;
}

void WorkerClocks::leave(size_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[slot];
  e.used = std::max(0.0, cpu_seconds(e.thread) - e.start);
}

double WorkerClocks::max_seconds() {
  std::lock_guard<std::mutex> lock(mu_);  // a worker cannot leave (and exit) while it is read
  double most = 0;
  for (const Entry& e : entries_) {
    const double now = e.used >= 0 ? e.used : cpu_seconds(e.thread) - e.start;
    most = std::max(most, now);
  }
  return most;
}

}  // namespace tmps::sim
