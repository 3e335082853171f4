// WorkerClocks (sim/cpu_clocks.h): what the watchdog measures is the CPU time the workers
// used, read from another thread; a worker that waits (a loaded machine) does not advance it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sim/cpu_clocks.h"

namespace {

using tmps::sim::WorkerClocks;
using namespace std::chrono_literals;

TEST(WorkerClocks, WaitingIsNotCounted) {
  WorkerClocks clocks;
  std::thread sleeper([&] {
    const size_t slot = clocks.enter();
    std::this_thread::sleep_for(300ms);  // wall time passes, almost no CPU time
    clocks.leave(slot);
  });
  sleeper.join();
  EXPECT_LT(clocks.max_seconds(), 0.1);
}

TEST(WorkerClocks, RunningWorkerIsReadFromAnotherThread) {
  WorkerClocks clocks;
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    const size_t slot = clocks.enter();
    volatile unsigned long n = 0;
    while (!stop.load(std::memory_order_relaxed)) n = n + 1;
    clocks.leave(slot);
  });
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (clocks.max_seconds() < 0.2 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(10ms);
  const double seen = clocks.max_seconds();
  stop = true;
  spinner.join();
  EXPECT_GE(seen, 0.2);
  EXPECT_GE(clocks.max_seconds(), seen);  // after leave(): the final figure, no longer read live
}

}  // namespace
