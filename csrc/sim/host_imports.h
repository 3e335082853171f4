// What a built kernel library would take from the host process.
//
// A simulated kernel is a shared object loaded into the user's process: every symbol it
// leaves undefined is resolved against the host (libc, libstdc++, Python). MSL has no such
// functions, so a kernel that imports anything but the math and memory routines our shim
// lowers to (sinf, memset, ...) is MSL that Metal would reject, e.g. a declared `system()`,
// `printf`, or `new` (operator new). The build rejects it before the library is ever loaded.
#pragma once

#include <string>
#include <vector>

namespace tmps::sim {

// Undefined dynamic symbols of the ELF shared object at `path` (empty for a non-ELF file, e.g.
// Mach-O on macOS, where this check is skipped). Throws CompileError if the file is unreadable.
std::vector<std::string> undefined_symbols(const std::string& path);

// True for the C math and memory functions kernels may import from the host.
bool allowed_host_import(const std::string& name);

}  // namespace tmps::sim
