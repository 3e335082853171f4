// Line tables on demand. Memcheck builds carry no debug information (-g0): line tables were
// ~23% of their compile time, and only a report (memcheck, race check) ever reads them. The
// first report in a library builds its twin with line tables (the same source, options and
// optimization level), checks that the twin's loaded sections equal the library's byte for
// byte, and maps the report's code address through the twin. Twins are cached beside the
// libraries (`<key>.lines.so`, with the usual sidecar).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace tmps::sim {

class LineTables {
 public:
  // `build(out)`: compiles the library's source with line tables to `out` (throws on failure).
  // The twin is `twin_name` in the writable cache (pipeline_cache.h), found on first need.
  using Build = std::function<void(const std::string& out)>;
  LineTables(std::string library, std::string twin_name, Build build);

  // The file whose line tables describe `library`: the twin, built now if the cache has no
  // intact copy. "" when it cannot be built or its code differs from the library's; `why` then
  // says why. Tried once per library. Never throws. Runs the build on a thread of its own:
  // callers are kernel fibers with small stacks.
  std::string twin(std::string& why);

 private:
  std::string twin_locked(std::string& why);
  std::string build_and_check(std::string& why);

  std::mutex mu_;
  bool tried_ = false;
  std::string library_, twin_name_, result_, why_;
  Build build_;
};

// The line tables of the loaded kernel library at `path`, or nullptr when it carries its own
// (or is not one of ours). Defined with the libraries (sim_device.cpp).
std::shared_ptr<LineTables> line_tables_of(const std::string& path);

// Whether the two ELF shared objects have the same loaded sections (name, address, size and
// bytes of every allocated section with contents). `why` names the first difference.
bool same_loaded_sections(const std::string& a, const std::string& b, std::string& why);

}  // namespace tmps::sim
