// The simulator's compiler driver: builds kernel shared objects atomically (and the strict
// Metal check) with the toolchain that toolchain.h finds and runs.
#include "sim_compiler.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cxxabi.h>
#include <filesystem>
#include <memory>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "pipeline_cache.h"
#include "sha256.h"
#include "host_imports.h"
#include "object_cache.h"

namespace tmps::sim {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::mutex g_mu;  // g_shim_dir
std::string g_shim_dir;

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Temporary files removed on scope exit unless released.
class TempFiles {
 public:
  ~TempFiles() {
    for (const std::string& p : paths_) std::remove(p.c_str());
    std::error_code ignored;
    for (const std::string& d : dirs_) std::filesystem::remove_all(d, ignored);
  }
  void add(const std::string& p) { paths_.push_back(p); }
  void add_dir(const std::string& d) { dirs_.push_back(d); }
  void release(const std::string& p) {
    for (auto it = paths_.begin(); it != paths_.end(); ++it)
      if (*it == p) { paths_.erase(it); return; }
  }

 private:
  std::vector<std::string> paths_;
  std::vector<std::string> dirs_;  // removed with their contents
};

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(now & 0xffffff);
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void make_dirs(const std::string& dir) {
  if (dir.empty() || file_exists(dir)) return;
  make_dirs(dir_of(dir));
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    const int err = errno;
    throw HostError("simulator: cannot create " + dir + ": " + std::strerror(err), err);
  }
}

// "_Z6printfPKcz" -> "printf(char const*, ...)"; other names unchanged.
std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// Temporary files of builds whose process died (killed mid-compile): "<name>.tmp-<pid>-..."
// in the cache and "tmps-strict-<pid>-..." in the temp dir. Removed once per directory and
// process, only when no process with that pid exists (a live one may still be writing).
void remove_stale_temps(const std::string& dir, const std::string& marker) {
  static std::mutex mu;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.insert(dir + "|" + marker).second) return;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const size_t at = name.find(marker);
    if (at == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + at + marker.size(), nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(getpid())) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(dir + "/" + name, ignored);
  }
  closedir(d);
}

// $TMPDIR (or /tmp): where the strict check writes its source, and the compiler and linker
// their temporary files. Checked up front: a TMPDIR naming a missing or read-only folder
// otherwise fails every compile with the tools' own words, which do not name TMPDIR.
std::string temp_dir() {
  const std::string set = env("TMPDIR");
  const std::string dir = set.empty() ? "/tmp" : set;
  struct stat st;
  std::string why;
  if (stat(dir.c_str(), &st) != 0) why = std::strerror(errno);
  else if (!S_ISDIR(st.st_mode)) why = "not a directory";
  else if (access(dir.c_str(), W_OK | X_OK) != 0) why = std::strerror(errno);
  if (!why.empty())
    throw InvalidArgument("simulator: " + (set.empty() ? std::string("/tmp") : "TMPDIR='" + set + "'") +
                          " is not a writable directory (" + why + "); the kernel compiler writes its temporary "
                          "files there: create it, or set TMPDIR to a writable directory");
  return dir;
}

// zig writes a cache even for trivial compiles; keep it under our cache dir so a read-only
// $HOME still works.
std::vector<std::string> compiler_env(const Toolchain& t) {
  std::vector<std::string> out;
  if (!is_zig(t)) return out;
  if (env("ZIG_GLOBAL_CACHE_DIR").empty() || env("ZIG_LOCAL_CACHE_DIR").empty()) {
    const std::string dir = usable_cache_dir("zig");  // a private one if the cache is unusable
    if (env("ZIG_GLOBAL_CACHE_DIR").empty()) out.push_back("ZIG_GLOBAL_CACHE_DIR=" + dir);
    if (env("ZIG_LOCAL_CACHE_DIR").empty()) out.push_back("ZIG_LOCAL_CACHE_DIR=" + dir);
  }
  return out;
}

// "3.2" -> "-D__METAL_VERSION__=320": the value Metal's compiler defines for the
// MTLCompileOptions.languageVersion the kernel is compiled with, so the shim hides API that
// Metal introduced later (docs/msl-versions.md). Below 3.1 the shim would not hide 3.1 API
// (bfloat, ...): those versions are refused, as they are below the oldest supported macOS (14).
std::string metal_version_flag(const CompileOptions& options) {
  unsigned major = 0, minor = 0;
  char tail = 0;
  const std::string& v = options.language_version;
  if (std::sscanf(v.c_str(), "%u.%u%c", &major, &minor, &tail) != 2 || major > 9 || minor > 9)
    throw InvalidArgument("kernel '" + options.label + "': language_version '" + v + "' is not of the form \"3.1\"");
  if (major * 10 + minor < 31)
    throw InvalidArgument("kernel '" + options.label + "': language_version " + v +
                          " is older than MSL 3.1, the oldest version triton-mps supports (macOS 14)");
  return "-D__METAL_VERSION__=" + std::to_string(major * 100 + minor * 10);
}

// Flags shared by the build and the strict check. Freestanding: only our shim is visible.
// No excess precision: half and bfloat round after every operation, as on the GPU.
void common_flags(std::vector<std::string>& a, const CompileOptions& options) {
  for (const char* f : {"-nostdinc", "-nostdinc++", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-Xclang",
                        "-ffloat16-excess-precision=none", "-Xclang", "-fbfloat16-excess-precision=none", "-std=c++17", "-fno-color-diagnostics", "-ferror-limit=20",
                        "-Wno-unknown-attributes", "-Wno-ignored-attributes", "-Wno-unused-command-line-argument"})
    a.push_back(f);
  a.push_back(metal_version_flag(options));
  for (const auto& [name, value] : options.macros) a.push_back("-D" + name + "=" + value);
  a.push_back("-I" + shim_dir());
}

// Math modes. Safe (the default, Triton's semantics): IEEE arithmetic, no reassociation, no
// reciprocal tricks, and no implicit FMA contraction, so results do not depend on how the
// optimizer schedules code; Triton code that wants FMA emits fma() explicitly. math-errno is
// off in every mode: kernels have no errno, and it lets sqrt stay an instruction.
// Relaxed follows Metal's relaxed mode: reassociation and contraction allowed, but infinities
// and NaNs still honoured. Fast is clang's -ffast-math (also assumes finite values).
void math_flags(std::vector<std::string>& a, MathMode mode) {
  a.push_back("-fno-math-errno");
  switch (mode) {
    case MathMode::Safe:
      for (const char* f : {"-fno-fast-math", "-ffp-contract=off"}) a.push_back(f);
      break;
    case MathMode::Relaxed:
      for (const char* f : {"-fassociative-math", "-freciprocal-math", "-fno-signed-zeros", "-fno-trapping-math", "-ffp-contract=fast"})
        a.push_back(f);
      break;
    case MathMode::Fast:
      a.push_back("-ffast-math");
      break;
  }
}

// clang reports a poisoned identifier (see tmps_metal.h) as "attempt to use a poisoned
// identifier" and shows the line with a caret under it: say instead what Metal says.
std::string metal_wording(const std::string& text) {
  static const std::string kPoison = "attempt to use a poisoned identifier";
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t at = lines[i].find(kPoison);
    if (at == std::string::npos || i + 2 >= lines.size()) continue;
    const size_t caret = lines[i + 2].find('^');
    const std::string& src = lines[i + 1];
    if (caret == std::string::npos || caret >= src.size()) continue;
    size_t b = caret, e = caret;
    while (e < src.size() && (std::isalnum(static_cast<unsigned char>(src[e])) || src[e] == '_')) ++e;
    const std::string word = src.substr(b, e - b);
    const std::string what = word == "double"    ? "'double' is not supported in Metal (use float)"
                             : word == "goto"    ? "'goto' is not supported in Metal"
                             : word == "virtual" ? "virtual functions are not supported in Metal"
                             : (word == "asm" || word == "__asm__" || word == "__asm")
                                 ? "inline assembly is not supported in Metal"
                             : (word == "new" || word == "delete")
                                 ? "dynamic memory allocation ('" + word + "') is not supported in Metal"
                                 : "'" + word + "' is not supported in Metal";
    lines[i].replace(at, kPoison.size(), what);
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

// "zig clang" for {".../zig", "clang", ...}; "clang++" for {"/usr/bin/clang++", ...}.
std::string tool_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "compiler";
  std::string name = argv[0].substr(argv[0].find_last_of('/') == std::string::npos ? 0 : argv[0].find_last_of('/') + 1);
  if ((name == "zig" || name == "zig.exe") && argv.size() > 1) name += " " + argv[1];
  return name;
}

std::string signal_name(int sig) {
  static const std::map<int, const char*> names = {{SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGSEGV, "SIGSEGV"},
                                                   {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},
                                                   {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGPIPE, "SIGPIPE"}};
  auto it = names.find(sig);
  const char* what = strsignal(sig);
  return std::to_string(sig) + " (" + (it != names.end() ? std::string(it->second) + ": " : std::string()) +
         (what ? what : "unknown") + ")";
}

// A tool killed by a signal (the out-of-memory killer on a loaded machine, a kill from outside)
// says nothing about the kernel: it runs once more, and a second death is reported as the
// host's failure (HostError), never as a verdict on the kernel.
RunResult run_tool(const std::vector<std::string>& argv, const std::string& role, const CompileOptions& options,
                   const std::function<RunResult()>& run) {
  RunResult r = run();
  if (r.signal == 0) return r;
  r = run();
  if (r.signal == 0) return r;
  const std::string what = options.label.empty() ? std::string() : " for kernel '" + options.label + "'";
  throw HostError("simulator: the compiler (" + tool_name(argv) + ", " + role + ")" + what + " was killed by signal " +
                  signal_name(r.signal) + ", twice; the kernel was not checked. This is not about the kernel: the "
                  "tool died (a signal from outside, or the out-of-memory killer on a loaded machine); run it again");
}

// A tool that failed because the disk refused its output (full, quota): the host's failure,
// with the OS's reason, so the caller can move the build out of a full cache.
void throw_if_disk_refused(const RunResult& r, const std::string& where) {
  if (r.status == 0) return;
  for (int err : disk_refusals())
    if (r.output.find(std::strerror(err)) != std::string::npos)
      throw HostError("simulator: the compiler could not write its output in " + where + ": " + std::strerror(err), err);
}

std::string diagnostics(const RunResult& r) {
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (out.empty())
    out = r.signal ? "the compiler was killed by signal " + signal_name(r.signal)
                   : "the compiler failed with exit code " + std::to_string(r.status);
  return out;
}

}  // namespace

void set_shim_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_shim_dir = dir;
}

std::string shim_dir() {
  std::string dir = env("TRITON_MPS_SIM_INCLUDE");
  if (dir.empty()) {
    std::lock_guard<std::mutex> lock(g_mu);
    dir = g_shim_dir;
  }
#ifdef TMPS_SOURCE_SHIM_DIR
  if (dir.empty()) dir = TMPS_SOURCE_SHIM_DIR;
#endif
  if (dir.empty()) throw Unavailable("simulator: no metal_stdlib shim directory configured (set TRITON_MPS_SIM_INCLUDE)");
  if (!file_exists(dir + "/metal_stdlib"))
    throw Unavailable("simulator: metal_stdlib shim not found in '" + dir + "' (set TRITON_MPS_SIM_INCLUDE)");
  return dir;
}

std::string shim_hash() {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  const std::string dir = shim_dir();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(dir); it != cache.end()) return it->second;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(std::filesystem::relative(e.path(), dir).generic_string());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    text += f + '\n' + sha256_file_hex(dir + "/" + f) + '\n';
  }
  return cache[dir] = sha256_hex(text);
}

namespace {
// Everything on the build command line but the file names.
void build_flags(std::vector<std::string>& argv, const CompileOptions& options, OptLevel level, bool line_tables = false) {
  // -nostdlib: the object needs no libc at link time (math calls resolve at dlopen from the
  // host process); with zig it also avoids building libc stubs on a cold cache (~6 s).
  // -s: no static symbol table, which would record the temporary source file's random name
  // and make rebuilds of the same kernel differ (kernels are found through dynamic symbols).
  const bool direct = !find_toolchain().cc.empty();
  const char* opt = level == OptLevel::Quick ? "-O0" : "-O2";
  if (direct)
    for (const char* f : {"-c", "-fPIC", opt, "-fvisibility=hidden"}) argv.push_back(f);
  else
    for (const char* f : {"-shared", "-fPIC", opt, "-nostdlib", "-fvisibility=hidden"}) argv.push_back(f);
  if (options.memcheck) {
    // Memcheck: AddressSanitizer's instrumentation in outline mode (a call per load and
    // store, answered by the shim's tmps_metal_memcheck.h; no ASan runtime, no shadow
    // memory, no constructor), only for memory reached through pointers (locals and globals
    // are not poisoned). Atomic read-modify-writes call the shim's own hook instead (they are
    // not plain accesses for the race check); a store after a load of the same address is
    // checked too (the race check needs both).
    for (const char* f : {"-fsanitize=address", "-fsanitize-address-outline-instrumentation", "-fno-sanitize-address-use-after-scope",
                          "-mllvm", "-asan-stack=0", "-mllvm", "-asan-globals=0", "-mllvm", "-asan-constructor-kind=none", "-mllvm", "-asan-instrument-atomics=0", "-mllvm", "-asan-opt-same-temp=0",
                          // accesses proven in bounds of a local are not checked: a collapsed
                          // kernel's lane arrays (sim/simd_collapse.h) indexed by the lane
                          "-mllvm", "-asan-use-stack-safety=1", "-DTMPS_SIM_MEMCHECK=1"})
      argv.push_back(f);
  }
  if (line_tables) {
    // Only in a library's twin (line_tables.h), which maps a report's address to its MSL line
    // (builds stay reproducible: see compile_shared_object). DWARF 4: binutils' addr2line
    // (memcheck.cpp) misses the inlined frames of a split range in DWARF 5 (rnglistx), i.e.
    // the kernel line of a shim function's out-of-line call (a checked access's miss).
    for (const char* f : {"-gline-tables-only", "-gdwarf-4", "-fdebug-compilation-dir=."}) argv.push_back(f);
  } else {
    argv.push_back("-g0");
    if (!direct) argv.push_back("-s");  // direct mode strips at the link (link_flags)
  }
#ifdef __APPLE__
  argv.push_back("-Wl,-undefined,dynamic_lookup");
#endif
  common_flags(argv, options);
  math_flags(argv, options.math_mode);
  for (const std::string& f : sim_target().flags) argv.push_back(f);
  for (const char* f : {"-x", "c++"}) argv.push_back(f);
}

// Direct mode's link (ld.lld): a shared object, stripped unless it is a twin with line tables.
std::vector<std::string> link_flags(bool line_tables = false) {
  std::vector<std::string> f = {"-shared"};
  if (!line_tables) f.push_back("-s");
  return f;
}
}  // namespace

namespace {
// The shim's out-of-line functions (memcheck's callbacks, which every load and store calls)
// are compiled once into a "support" object that every kernel library links, not once per
// kernel: they cost ~0.11 s of compiler time each time (measured: an empty kernel built in
// 0.17 s with them, 0.05 s without), most of a small kernel's build. The object is a pure
// function of the flags below, the toolchain and the shim, all of which name it.
const char* const kSupportSource = "#define TMPS_SIM_SUPPORT 1\n#include <metal_stdlib>\n";

void support_flags(std::vector<std::string>& argv, const CompileOptions& options) {
  for (const char* f : {"-c", "-fPIC", "-O2", "-fvisibility=hidden", "-g0"}) argv.push_back(f);
  if (options.memcheck) argv.push_back("-DTMPS_SIM_MEMCHECK=1");
  common_flags(argv, options);
  math_flags(argv, options.math_mode);
  for (const std::string& f : sim_target().flags) argv.push_back(f);
  for (const char* f : {"-x", "c++"}) argv.push_back(f);
}

// `name` in the read-only cache beneath the writable one (pipeline_cache.h CacheDirs), if it is
// there and matches its sidecar; "" otherwise.
std::string intact_in_read_only_cache(const std::string& name) {
  const std::string ro = cache_dirs("sim").read_only;
  if (ro.empty()) return "";
  const std::string path = ro + "/" + name;
  return artifact_intact(path) ? path : "";
}

void compile_in(const std::string& work, const std::vector<std::string>& argv, const Toolchain& tc, const std::string& what,
                const std::string& output, const CompileOptions& options) {
  RunResult r = run_tool(argv, "compiling " + what, options, [&] { return run_process(argv, compiler_env(tc), work); });
  throw_if_disk_refused(r, work);
  if (r.status != 0 || !file_exists(work + "/" + output))
    throw CompileError("simulator: compiling " + what + " failed:\n" + diagnostics(r));
}

// Path of the support object for `options`, built on first use (atomically: a private
// directory, then rename, so concurrent processes at worst both build it). Its sidecar
// (object_cache.h) is checked before every use: a damaged object is rebuilt, never linked.
std::string support_object(const Toolchain& tc, const CompileOptions& options, const std::string& dir) {
  std::vector<std::string> flags;
  support_flags(flags, options);
  std::string key = tc.version + '\n' + shim_hash() + '\n' + kSupportSource;
  for (const std::string& f : flags) key += f + '\n';
  const std::string name = "support-" + sha256_hex(key) + ".o";
  const std::string path = dir + "/" + name;
  if (artifact_intact(path)) return path;
  if (std::string shared = intact_in_read_only_cache(name); !shared.empty()) return shared;
  const std::string work = path + ".tmp-" + unique_suffix() + ".d";
  TempFiles temps;
  make_dirs(work);
  temps.add_dir(work);
  write_whole_file(work + "/support.cpp", kSupportSource);
  std::vector<std::string> argv = tc.cc.empty() ? tc.cxx : tc.cc;
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* f : {"support.cpp", "-o", "support.o"}) argv.push_back(f);
  compile_in(work, argv, tc, "the simulator's support object", "support.o", options);
  publish_artifact(work + "/support.o", path);  // HostError (with errno) if the disk refuses it
  return path;
}

// A precompiled header of the shim for the compile `flags` (direct mode only: the same
// driver must build and use it). Parsing the shim is ~0.02-0.03 s of every build and strict
// check; loading the PCH is a few ms. Keyed by the flags, the toolchain and the shim (path and
// contents); clang also checks the headers' contents when their times differ (a reinstall).
std::string shim_pch(const Toolchain& tc, std::vector<std::string> flags, const std::string& dir) {
  while (!flags.empty() && (flags.back() == "c++" || flags.back() == "-x")) flags.pop_back();
  flags.erase(std::remove(flags.begin(), flags.end(), std::string("-c")), flags.end());
  flags.erase(std::remove(flags.begin(), flags.end(), std::string("-fsyntax-only")), flags.end());
  for (const char* f : {"-Xclang", "-fno-pch-timestamp", "-fpch-validate-input-files-content"}) flags.push_back(f);
  std::string key = tc.version + '\n' + shim_dir() + '\n' + shim_hash() + '\n';
  for (const std::string& f : flags) key += f + '\n';
  const std::string name = "shim-" + sha256_hex(key) + ".pch";
  const std::string path = dir + "/" + name;
  if (artifact_intact(path)) return path;  // checked like the support object: damage means a rebuild
  if (std::string shared = intact_in_read_only_cache(name); !shared.empty()) return shared;
  const std::string work = path + ".tmp-" + unique_suffix() + ".d";
  TempFiles temps;
  make_dirs(work);
  temps.add_dir(work);
  std::vector<std::string> argv = tc.cc;
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a : {std::string("-x"), std::string("c++-header"), shim_dir() + "/metal_stdlib",
                               std::string("-o"), std::string("shim.pch")})
    argv.push_back(a);
  compile_in(work, argv, tc, "the shim's precompiled header", "shim.pch", CompileOptions{});
  try {
    publish_artifact(work + "/shim.pch", path);
  } catch (const Error& e) {
    throw CompileError(std::string("simulator: cannot store the precompiled header: ") + e.what());
  }
  return path;
}

// Runs `argv` (a compile) with the shim's PCH for it; without, if the PCH cannot be built or
// clang rejects it (a stale or foreign file): the PCH only saves time.
// argv[flags_begin, flags_end) are the compile's flags (the PCH's too); `files` follow them.
RunResult run_with_pch(const Toolchain& tc, std::vector<std::string> argv, size_t flags_begin, size_t flags_end,
                       const std::string& dir, const std::string& cwd, const std::vector<std::string>& files) {
  std::string pch;
  try {
    pch = shim_pch(tc, std::vector<std::string>(argv.begin() + flags_begin, argv.begin() + flags_end), dir);
  } catch (const Error&) {
    pch.clear();
  }
  argv.insert(argv.end(), files.begin(), files.end());
  if (!pch.empty()) {
    std::vector<std::string> with = argv;
    with.insert(with.begin() + flags_begin, {"-include-pch", pch});
    RunResult r = run_process(with, compiler_env(tc), cwd);
    // clang says "precompiled header" for a stale one, "malformed or corrupted precompiled file
    // ... referenced by AST file" when a header it names is gone (a reinstall under way).
    const bool pch_rejected = r.output.find("precompiled") != std::string::npos ||
                              r.output.find("AST file") != std::string::npos;
    if (r.status == 0 || !pch_rejected) return r;
    std::remove(pch.c_str());  // rebuilt by the next compile; processes using it keep their open file
  }
  return run_process(argv, compiler_env(tc), cwd);
}
}  // namespace

namespace {
// The CPU simulated kernels are built for. Never the host's own ("native"): a host feature can
// change numerics (AVX512-BF16's conversion flushes subnormals, where the shim rounds exactly),
// and the same kernel must give the same bits on every developer's and CI's machine. So the
// target is one of a fixed ladder, chosen by what the host can execute; every rung computes the
// same bits (no fast math, no contraction; half/bfloat conversions are exact IEEE in hardware
// (F16C, ARMv8 FCVT) or in the shim's compiler-rt stand-ins). TRITON_MPS_SIM_CPU overrides the
// choice (a CPU in the compiler's syntax, e.g. "x86_64_v4+avx512bf16" for zig), for tests that
// prove the bits do not depend on it.
bool host_runs_x86_64_v3() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3");
#else
  return false;
#endif
}

SimTarget choose_target(bool zig, bool clang_spelling) {
  SimTarget t;
  std::string custom = env("TRITON_MPS_SIM_CPU");
  if (!custom.empty()) {
    t.name = custom;
  } else {
#if defined(__x86_64__)
    t.name = host_runs_x86_64_v3() ? "x86_64_v3" : "x86_64";
#elif defined(__aarch64__)
    t.name = "generic";  // ARMv8.0-A: no BF16 instructions, FP16 only through exact FCVT
#else
    t.name = "generic";
#endif
  }
  // Hardware bfloat conversions flush subnormals (x86 AVX512-BF16 / AVX-NE-CONVERT, Arm BFCVT
  // without FEAT_EBF16): always off, even on an explicitly chosen CPU, so the shim's exact
  // conversion runs.
#if defined(__x86_64__)
  const std::vector<std::string> no_bf16 = {"avx512bf16", "avxneconvert"};
#else
  const std::vector<std::string> no_bf16 = {"bf16"};
#endif
  if (zig && clang_spelling) {
    // zig's syntax ("x86_64_v4+avx512bf16") for zig's bundled clang driver: the CPU with
    // dashes, features as cc1 target features.
    std::string spec = t.name;
    const size_t cut = spec.find_first_of("+-");
    std::string cpu = spec.substr(0, cut), features = cut == std::string::npos ? "" : spec.substr(cut);
    for (char& c : cpu) if (c == '_') c = '-';
#if defined(__x86_64__)
    t.flags = {"-march=" + cpu};
#else
    t.flags = {"-mcpu=" + cpu};
#endif
    auto feature = [&](const std::string& f) {
      for (const std::string& a : {std::string("-Xclang"), std::string("-target-feature"), std::string("-Xclang"), f})
        t.flags.push_back(a);
    };
    for (size_t i = 0; i < features.size();) {
      size_t j = features.find_first_of("+-", i + 1);
      if (j == std::string::npos) j = features.size();
      const std::string f = features.substr(i, j - i);
      if (f.size() > 1) feature(f);
      i = j;
    }
    for (const std::string& f : no_bf16) feature("-" + f);
  } else if (zig) {
    std::string cpu = t.name;
    for (const std::string& f : no_bf16) cpu += "-" + f;
    t.flags = {"-mcpu=" + cpu};
  } else {
    // clang spells the same CPUs with dashes (x86-64-v3); "generic" means the architecture's baseline.
    std::string march = t.name;
    for (char& c : march) if (c == '_') c = '-';
    if (march == "generic") march = "armv8-a";
#if defined(__x86_64__)
    t.flags = {"-march=" + march};
    for (const std::string& f : no_bf16) t.flags.push_back("-mno-" + f);
#else
    t.flags = {"-march=" + march + "+nobf16"};
#endif
  }
  return t;
}
}  // namespace

namespace {
// TRITON_MPS_SIM_CPU is the user's: a CPU or feature the compiler does not know would fail every
// build with the compiler's words, which never name the variable. One empty compile with the
// target's flags says it up front (only when the variable is set).
void check_custom_target(const SimTarget& t) {
  const std::string custom = env("TRITON_MPS_SIM_CPU");
  if (custom.empty()) return;
  const Toolchain& tc = find_toolchain();
  std::vector<std::string> argv = tc.cc.empty() ? tc.cxx : tc.cc;
  argv.insert(argv.end(), t.flags.begin(), t.flags.end());
  for (const char* f : {"-x", "c++", "-c", "-o", "/dev/null", "/dev/null"}) argv.push_back(f);
  const RunResult r = run_process(argv, compiler_env(tc));
  const bool unknown_feature = r.output.find("not a recognized feature") != std::string::npos;
  if (r.status == 0 && !unknown_feature) return;
  std::string said = r.output.substr(0, r.output.find('\n'));
  throw InvalidArgument("TRITON_MPS_SIM_CPU='" + custom + "' is not a CPU the simulator's compiler (" + tc.description +
                        ") accepts: " + (said.empty() ? diagnostics(r) : said) +
                        ". Use a CPU in the compiler's syntax (x86-64: x86_64, x86_64_v2, x86_64_v3, x86_64_v4; Arm: "
                        "generic, apple_m1, ...), optionally with +feature or -feature, or unset it");
}
}  // namespace

const SimTarget& sim_target() {
  static const SimTarget target = [] {
    SimTarget t = choose_target(is_zig(find_toolchain()), !find_toolchain().cc.empty());
    check_custom_target(t);
    return t;
  }();
  return target;
}

std::string build_fingerprint(const CompileOptions& options, OptLevel level) {
  std::vector<std::string> argv;
  build_flags(argv, options, level);
  std::string out;
  for (const auto& a : argv) out += a + '\n';
  if (!find_toolchain().cc.empty()) {
    out += "link:\n";
    for (const auto& a : link_flags()) out += a + '\n';
  }
  return out;
}

void compile_shared_object(const std::string& cpp, const std::string& out_path, const CompileOptions& options,
                           OptLevel level, const std::function<void()>& settle, bool line_tables) {
  const Toolchain& tc = find_toolchain();
  temp_dir();  // the compiler and linker write temporary files there
  std::string dir = dir_of(out_path);
  make_dirs(dir);
  remove_stale_temps(dir, ".tmp-");
  // The build runs in a private directory on fixed names (kernel.cpp -> kernel.so): the
  // object records its source's name, and the same kernel must give the same bytes.
  const std::string work = out_path + ".tmp-" + unique_suffix() + ".d";
  TempFiles temps;
  make_dirs(work);
  temps.add_dir(work);
  const std::string src = work + "/kernel.cpp";
  const std::string so = work + "/kernel.so";
  write_whole_file(src, cpp);

  RunResult r;
  if (!tc.cc.empty()) {  // direct mode: clang -c with the shim's PCH, then ld.lld
    // The support object (built once per cache) is needed only at the link: on a cold cache it
    // builds beside the PCH and the kernel's compile instead of before them.
    std::future<std::string> support_built =
        std::async(std::launch::async, [&tc, &options, &dir, nice = ChildNice::current()] {
          ChildNice nicer(nice);
          return support_object(tc, options, dir);
        });
    std::vector<std::string> argv = tc.cc;
    build_flags(argv, options, level, line_tables);
    const size_t n = argv.size();
    try {
      r = run_tool(argv, "the kernel's compile", options,
                   [&] { return run_with_pch(tc, argv, tc.cc.size(), n, dir, work, {"kernel.cpp", "-o", "kernel.o"}); });
    } catch (...) {
      try {
        support_built.get();
      } catch (...) {
      }
      throw;
    }
    const std::string support = support_built.get();
    if (r.status == 0) {
      std::vector<std::string> link = tc.ld;
      for (const std::string& f : link_flags(line_tables)) link.push_back(f);
      for (const std::string& a : {std::string("kernel.o"), support, std::string("-o"), std::string("kernel.so")})
        link.push_back(a);
      r = run_tool(link, "the kernel's link", options, [&] { return run_process(link, compiler_env(tc), work); });
    }
  } else {
    const std::string support = support_object(tc, options, dir);
    std::vector<std::string> argv = tc.cxx;
    build_flags(argv, options, level, line_tables);
    // `-x none` ends `-x c++`: the support object is an object file.
    for (const std::string& a : {std::string("kernel.cpp"), std::string("-x"), std::string("none"), support,
                                 std::string("-o"), std::string("kernel.so")})
      argv.push_back(a);
    r = run_tool(argv, "the kernel's build", options, [&] { return run_process(argv, compiler_env(tc), work); });
  }
  if (settle) settle();
  throw_if_disk_refused(r, work);
  if (r.status != 0 || !file_exists(so)) {
    std::string what = options.label.empty() ? std::string() : " for '" + options.label + "'";
    throw CompileError("simulator: compiling the kernel" + what + " failed:\n" + diagnostics(r));
  }
  std::string imports;
  for (const std::string& name : undefined_symbols(so))
    if (!allowed_host_import(name)) imports += (imports.empty() ? "" : ", ") + demangle(name);
  if (!imports.empty()) {
    std::string what = options.label.empty() ? std::string() : " ('" + options.label + "')";
    throw CompileError("Metal would reject this kernel" + what + ": it calls functions that are not part of Metal (" +
                       imports + "); a kernel may call only its own functions and the Metal standard library");
  }
  if (std::rename(so.c_str(), out_path.c_str()) != 0) {
    const int err = errno;
    throw HostError("simulator: cannot move the compiled kernel to " + out_path + ": " + std::strerror(err), err);
  }
}

void strict_check(const std::string& cpp, const CompileOptions& options) {
  const Toolchain& tc = find_toolchain();
  TempFiles temps;
  const std::string tmpdir = temp_dir();
  remove_stale_temps(tmpdir, "tmps-strict-");
  std::string src = tmpdir + "/tmps-strict-" + unique_suffix() + ".cpp";
  temps.add(src);
  write_whole_file(src, cpp);

  // `zig c++ -fsyntax-only` fails on its own output handling; zig's bundled clang driver
  // (`zig clang`) does syntax-only checks fine and needs no zig cache.
  std::vector<std::string> argv = tc.cxx;
  if (is_zig(tc)) argv = {tc.cxx[0], "clang"};
  const size_t flags_begin = argv.size();
  argv.push_back("-fsyntax-only");
  argv.push_back("-DTMPS_SIM_STRICT=1");
  common_flags(argv, options);
  math_flags(argv, options.math_mode);
  for (const char* f : {"-x", "c++"}) argv.push_back(f);
  RunResult r;
  if (!tc.cc.empty()) {
    std::string dir = usable_cache_dir("sim");  // a private one if the cache is unusable
    make_dirs(dir);
    r = run_tool(argv, "the strict Metal check", options,
                 [&] { return run_with_pch(tc, argv, flags_begin, argv.size(), dir, {}, {src}); });
  } else {
    argv.push_back(src);
    r = run_tool(argv, "the strict Metal check", options, [&] { return run_process(argv, compiler_env(tc)); });
  }
  throw_if_disk_refused(r, tmpdir);
  if (r.status != 0) {
    std::string what = options.label.empty() ? std::string() : " ('" + options.label + "')";
    throw CompileError("Metal would reject this kernel" + what + ":\n" + metal_wording(diagnostics(r)));
  }
}

}  // namespace tmps::sim
