// The CPU time the worker threads of one dispatch used: what the watchdog measures, so a
// loaded machine (other processes taking the cores) does not make a healthy kernel time out.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace tmps::sim {

class WorkerClocks {
 public:
  // On a worker thread, when it starts on the dispatch: from now on its CPU time counts.
  size_t enter();
  // On the same thread, when it is done with the dispatch (before it exits).
  void leave(size_t slot);
  // The most CPU seconds any one worker used in this dispatch (a runaway threadgroup keeps
  // one worker busy; a long healthy dispatch keeps them all about equally busy).
  double max_seconds();

 private:
  struct Entry {
    unsigned long long thread = 0;  // the OS's handle for reading the thread's clock
    double start = 0;               // its CPU seconds at enter()
    double used = -1;               // its CPU seconds in the dispatch once it left; -1 while running
  };
  std::mutex mu_;
  std::vector<Entry> entries_;
};

}  // namespace tmps::sim
