// Exception types of the native core. csrc/python/exceptions.cpp maps each to a Python
// exception class (triton_mps.CompileError, ...) carrying the original message.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tmps {

// Base of every error we raise on purpose.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad arguments from the caller: wrong count/type, buffer too small, unbound binding.
struct InvalidArgument : Error {
  using Error::Error;
};
// MSL that does not compile (the message holds the compiler's diagnostics with MSL lines).
struct CompileError : Error {
  using Error::Error;
};
// A Metal limit exceeded: threads per threadgroup, threadgroup memory, buffer bindings.
// `limit`: the limit in force where one number says it (Metal's threads for a pipeline), else 0;
// Python reads it as the exception's `limit` attribute.
struct LimitExceeded : Error {
  using Error::Error;
  LimitExceeded(const std::string& message, uint64_t limit_) : Error(message), limit(limit_) {}
  uint64_t limit = 0;
};
// A dispatch failed while running (simulator: divergent barrier, deadlock, device fault, fail()).
struct DispatchError : Error {
  using Error::Error;
};
// A dispatch stopped by Ctrl-C (SIGINT). The bindings turn it into KeyboardInterrupt.
struct Interrupted : Error {
  using Error::Error;
};
// A device allocation failed even after releasing cached memory.
struct OutOfMemory : Error {
  using Error::Error;
};
// The backend is not usable here (no Metal device, no simulator compiler found).
struct Unavailable : Error {
  using Error::Error;
};
// The machine failed, not the kernel: the OS refused a cache write (`os_error`: its errno, e.g.
// ENOSPC), or a compiler tool died by a signal (0). Python: triton_mps.HostError, an OSError.
struct HostError : Error {
  using Error::Error;
  HostError(const std::string& message, int os_error_) : Error(message), os_error(os_error_) {}
  int os_error = 0;
};

}  // namespace tmps
