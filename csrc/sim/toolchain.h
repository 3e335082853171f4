// The simulator's toolchain: the C++ compiler that builds kernels (bfloat needs clang >= 17),
// found once per process, and how tools are run (a child process, no shell).
#pragma once

#include <string>
#include <vector>

namespace tmps::sim {

struct Toolchain {
  std::vector<std::string> cxx;  // command prefix, e.g. {"/.../ziglang/zig", "c++"} or {"clang++-18"}
  std::string description;       // "zig 0.17.1 (clang 22.1.8)"
  std::string version;           // part of cache keys
  // Direct mode (zig on ELF hosts): compile with `cc` (zig's bundled clang driver, which also
  // takes precompiled headers) and link with `ld` (zig's ld.lld), skipping zig's own build
  // driver and its cache. Empty: one `cxx` call compiles and links.
  std::vector<std::string> cc;
  std::vector<std::string> ld;
};

// Search order: $TRITON_MPS_SIM_CXX (a command line, split on spaces), $TRITON_MPS_ZIG (path
// to zig), `zig` on PATH, clang++ (>= 17) on PATH. Cached after the first call.
// Throws Unavailable explaining what to install (`pip install ziglang`).
const Toolchain& find_toolchain();

// True if the toolchain is zig (its own flags and cache directories).
bool is_zig(const Toolchain& t);

struct RunResult {
  int status = -1;     // exit code; -1 if it did not exit normally
  int signal = 0;      // the signal that killed it (0: none)
  std::string output;  // stdout and stderr, interleaved
};

// While an instance lives, the processes this thread starts (run_process) run `delta` nicer
// than ours (0: as ours). Background builds' compilers then yield the CPU to the threads a user
// waits on, and still get every idle core (backend/prebuild.py, CompileOptions::waited_for).
class ChildNice {
 public:
  explicit ChildNice(int delta);
  ~ChildNice();
  ChildNice(const ChildNice&) = delete;
  ChildNice& operator=(const ChildNice&) = delete;
  // The delta in force on this thread (for a helper thread to take over).
  static int current();

 private:
  int saved_;
};

// Runs argv[0] (searched on PATH) with `extra_env` added to our environment; collects output.
// On Linux the child is killed if this thread dies (PR_SET_PDEATHSIG), so a killed Python
// process leaves no compiler running on. A child stopped by SIGINT (Ctrl-C reaches the whole
// process group) throws Interrupted.
RunResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
                      const std::string& cwd = {});

// Run a command (argv[0] searched on PATH, no shell) and return its stdout and stderr;
// `status` gets the exit code (-1 if it did not run or exit normally).
std::string run_capture(const std::vector<std::string>& argv, int& status);

// The full path of `name` on $PATH ("" if none); a name with a '/' is checked as it is.
std::string which(const std::string& name);

}  // namespace tmps::sim
