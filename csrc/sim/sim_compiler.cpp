// The simulator's C++ toolchain: finding a clang, running it as a child process (argv passed
// directly, no shell), and building kernel shared objects atomically.
#include "sim_compiler.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/wait.h>
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
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "../pipeline_cache.h"
#include "../sha256.h"
#include "host_imports.h"

#ifdef __APPLE__
#include <crt_externs.h>
static char** process_environ() { return *_NSGetEnviron(); }
#else
extern char** environ;
static char** process_environ() { return environ; }
#endif

namespace tmps::sim {
namespace {

struct RunResult {
  int status = -1;     // exit code; -1 if it did not exit normally
  std::string output;  // stdout and stderr, interleaved
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_executable(const std::string& path);
std::string which(const std::string& name);

// Runs argv[0] (searched on PATH) with `extra_env` added to our environment; collects output.
// On Linux the child is killed if this thread dies (PR_SET_PDEATHSIG), so a killed Python
// process leaves no compiler running on. A child stopped by SIGINT (Ctrl-C reaches the whole
// process group) throws Interrupted.
RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
              const std::string& cwd = {}) {
  int fds[2];
#ifdef __APPLE__
  if (pipe(fds) != 0) throw Unavailable(std::string("simulator compiler: pipe() failed: ") + std::strerror(errno));
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#else
  if (pipe2(fds, O_CLOEXEC) != 0) throw Unavailable(std::string("simulator compiler: pipe() failed: ") + std::strerror(errno));
#endif
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  std::vector<std::string> env_store;
  for (char** e = process_environ(); e && *e; ++e) env_store.emplace_back(*e);
  for (const std::string& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  RunResult r;
  pid_t pid = 0;
#ifdef __linux__
  // fork + exec rather than posix_spawn: the child must set its parent-death signal. Between
  // fork and exec it calls only async-signal-safe functions.
  const std::string exe = which(argv[0]);
  if (exe.empty()) {
    close(fds[0]);
    close(fds[1]);
    r.output = "cannot run " + argv[0] + ": not found";
    return r;
  }
  const pid_t parent = getpid();
  pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(exe.c_str(), args.data(), envp.data());
    _exit(127);
  }
  const int rc = pid < 0 ? errno : 0;
#else
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
#endif
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    r.output = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  char buf[4096];
  for (;;) {
    ssize_t k = read(fds[0], buf, sizeof buf);
    if (k > 0) { r.output.append(buf, size_t(k)); continue; }
    if (k < 0 && errno == EINTR) continue;
    break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
    throw Interrupted("the simulator's compiler (" + argv[0] + ") was interrupted (Ctrl-C)");
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool is_executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  std::string path = env("PATH");
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find(':', b);
    if (e == std::string::npos) e = path.size();
    std::string dir = path.substr(b, e - b);
    if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
    b = e + 1;
  }
  return "";
}

std::string first_line(const std::string& s) {
  std::string l = s.substr(0, s.find('\n'));
  while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
  return l;
}

// "clang version 22.1.8 (...)" → "22.1.8"; also "Apple clang version 16.0.0".
std::string clang_version(const std::string& text) {
  size_t at = text.find("clang version ");
  if (at == std::string::npos) return "";
  at += 14;
  size_t e = at;
  while (e < text.size() && (std::isdigit((unsigned char)text[e]) || text[e] == '.')) ++e;
  return text.substr(at, e - at);
}

bool is_zig(const Toolchain& t) {
  const std::string& exe = t.cxx.empty() ? std::string() : t.cxx[0];
  std::string base = exe.substr(exe.find_last_of('/') == std::string::npos ? 0 : exe.find_last_of('/') + 1);
  return base == "zig" || base == "zig.exe";
}

// Probing zig costs two child processes (~40 ms), paid by every new process before its first
// cache lookup; remember the answer on disk, keyed by the binary's path, size and mtime.
std::string probe_memo_path(const std::string& exe) {
  struct stat st;
  if (stat(exe.c_str(), &st) != 0) return {};
  std::string key = exe + "|" + std::to_string(static_cast<long long>(st.st_size)) + "|" +
                    std::to_string(static_cast<long long>(st.st_mtime));
  try {
    std::string dir = cache_dir() + "/toolchain";
    mkdir(dir.c_str(), 0755);
    return dir + "/" + sha256_hex(key) + ".txt";
  } catch (const Error&) {
    return {};
  }
}

std::optional<Toolchain> zig_toolchain(const std::string& zig) {
  if (!is_executable(zig)) return std::nullopt;
  std::string memo = probe_memo_path(zig);
  std::string zv, cv;
  if (!memo.empty()) {
    std::ifstream in(memo);
    std::getline(in, zv);
    std::getline(in, cv);
    if (!in) zv.clear();
  }
  if (zv.empty() || cv.empty()) {
    RunResult v = run({zig, "version"});
    RunResult cc = run({zig, "cc", "--version"});
    if (v.status != 0 || cc.status != 0) return std::nullopt;
    zv = first_line(v.output);
    cv = clang_version(cc.output);
    if (!memo.empty() && !zv.empty() && !cv.empty()) {
      std::string tmp = memo + ".tmp" + std::to_string(getpid());
      {
        std::ofstream out(tmp);
        out << zv << "\n" << cv << "\n";
      }
      std::rename(tmp.c_str(), memo.c_str());  // atomic: readers see the old file or the whole new one
    }
  }
  Toolchain t;
  t.cxx = {zig, "c++"};
#ifndef __APPLE__
  t.cc = {zig, "clang"};
  t.ld = {zig, "ld.lld"};
#endif
  t.description = "zig " + zv + " (clang " + cv + ")";
  t.version = "zig-" + zv + "-clang-" + cv;
  return t;
}

// A system clang++: needs clang >= 17 for __bf16 (Apple clang 16 is LLVM 17).
std::optional<Toolchain> clang_toolchain(const std::string& clang) {
  RunResult r = run({clang, "--version"});
  if (r.status != 0) return std::nullopt;
  std::string v = clang_version(r.output);
  int major = std::atoi(v.c_str());
  bool apple = r.output.find("Apple clang") != std::string::npos;
  if (major < (apple ? 16 : 17)) return std::nullopt;
  Toolchain t;
  t.cxx = {clang};
  t.description = first_line(r.output);
  t.version = (apple ? "apple-clang-" : "clang-") + v;
  return t;
}

// A `ziglang` wheel in the active virtual environment (pip install ziglang) when zig is not on
// PATH: python's scripts do not put the binary there.
std::string venv_zig() {
  std::string venv = env("VIRTUAL_ENV");
  if (venv.empty()) return "";
  std::string lib = venv + "/lib";
  for (int minor = 20; minor >= 8; --minor) {
    std::string p = lib + "/python3." + std::to_string(minor) + "/site-packages/ziglang/zig";
    if (is_executable(p)) return p;
  }
  return "";
}

Toolchain discover() {
  std::string custom = env("TRITON_MPS_SIM_CXX");
  if (!custom.empty()) {
    Toolchain t;
    std::istringstream words(custom);
    for (std::string w; words >> w;) t.cxx.push_back(w);
    if (t.cxx.empty() || which(t.cxx[0]).empty()) throw Unavailable("TRITON_MPS_SIM_CXX='" + custom + "': compiler not found");
    std::vector<std::string> ver = t.cxx;
    ver.push_back("--version");
    RunResult r = run(ver);
    if (r.status != 0) throw Unavailable("TRITON_MPS_SIM_CXX='" + custom + "': `--version` failed: " + first_line(r.output));
    t.description = "custom: " + first_line(r.output);
    t.version = "custom-" + custom + "-" + first_line(r.output);
    return t;
  }
  std::string zig = env("TRITON_MPS_ZIG");
  if (!zig.empty()) {
    if (auto t = zig_toolchain(zig)) return *t;
    throw Unavailable("TRITON_MPS_ZIG='" + zig + "' is not a working zig executable");
  }
  if (auto t = zig_toolchain(which("zig"))) return *t;
  for (const char* name : {"clang++", "clang++-22", "clang++-21", "clang++-20", "clang++-19", "clang++-18", "clang++-17"}) {
    std::string path = which(name);
    if (path.empty()) continue;
    if (auto t = clang_toolchain(path)) return *t;
  }
  if (auto t = zig_toolchain(venv_zig())) return *t;
  throw Unavailable(
      "the triton-mps simulator needs a C++ compiler for kernels: `pip install ziglang` (and set TRITON_MPS_ZIG to "
      "its zig binary if it is not found), or put clang++ >= 17 on PATH, or set TRITON_MPS_SIM_CXX");
}

std::mutex g_mu;
std::optional<Toolchain> g_toolchain;
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

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw CompileError("simulator compiler: cannot write " + path);
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void make_dirs(const std::string& dir) {
  if (dir.empty() || file_exists(dir)) return;
  make_dirs(dir_of(dir));
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw CompileError("simulator compiler: cannot create " + dir);
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

// Flags shared by the build and the strict check. Freestanding: only our shim is visible.
// No excess precision: half and bfloat round after every operation, as on the GPU.
void common_flags(std::vector<std::string>& a, const CompileOptions& options) {
  for (const char* f : {"-nostdinc", "-nostdinc++", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-Xclang",
                        "-ffloat16-excess-precision=none", "-Xclang", "-fbfloat16-excess-precision=none", "-std=c++17", "-fno-color-diagnostics", "-ferror-limit=20",
                        "-Wno-unknown-attributes", "-Wno-ignored-attributes", "-Wno-unused-command-line-argument"})
    a.push_back(f);
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

std::string diagnostics(const RunResult& r) {
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (out.empty()) out = r.status < 0 ? "the compiler crashed" : "the compiler failed with exit code " + std::to_string(r.status);
  return out;
}

}  // namespace

std::string run_capture(const std::vector<std::string>& argv, int& status) {
  RunResult r = run(argv);
  status = r.status;
  return r.output;
}

const Toolchain& find_toolchain() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_toolchain) g_toolchain = discover();  // a failure is not cached: the user may install one
  return *g_toolchain;
}

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
void build_flags(std::vector<std::string>& argv, const CompileOptions& options) {
  // -nostdlib: the object needs no libc at link time (math calls resolve at dlopen from the
  // host process); with zig it also avoids building libc stubs on a cold cache (~6 s).
  // -s: no static symbol table, which would record the temporary source file's random name
  // and make rebuilds of the same kernel differ (kernels are found through dynamic symbols).
  const bool direct = !find_toolchain().cc.empty();
  if (direct)
    for (const char* f : {"-c", "-fPIC", "-O2", "-fvisibility=hidden"}) argv.push_back(f);
  else
    for (const char* f : {"-shared", "-fPIC", "-O2", "-nostdlib", "-fvisibility=hidden"}) argv.push_back(f);
  if (options.memcheck) {
    // Memcheck: AddressSanitizer's instrumentation in outline mode (a call per load and
    // store, answered by the shim's tmps_metal_memcheck.h; no ASan runtime, no shadow
    // memory, no constructor), only for memory reached through pointers (locals and globals
    // are not poisoned). Atomic read-modify-writes call the shim's own hook instead (they are
    // not plain accesses for the race check); a store after a load of the same address is
    // checked too (the race check needs both). Line tables map a bad access to its MSL line (builds stay
    // reproducible: see compile_shared_object).
    for (const char* f : {"-fsanitize=address", "-fsanitize-address-outline-instrumentation", "-fno-sanitize-address-use-after-scope",
                          "-mllvm", "-asan-stack=0", "-mllvm", "-asan-globals=0", "-mllvm", "-asan-constructor-kind=none", "-mllvm", "-asan-instrument-atomics=0", "-mllvm", "-asan-opt-same-temp=0",
                          "-gline-tables-only", "-fdebug-compilation-dir=.", "-DTMPS_SIM_MEMCHECK=1"})
      argv.push_back(f);
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

// Direct mode's link (ld.lld): a shared object, stripped unless memcheck needs line tables.
std::vector<std::string> link_flags(const CompileOptions& options) {
  std::vector<std::string> f = {"-shared"};
  if (!options.memcheck) f.push_back("-s");
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

void compile_in(const std::string& work, const std::vector<std::string>& argv, const Toolchain& tc, const std::string& what,
                const std::string& output) {
  RunResult r = run(argv, compiler_env(tc), work);
  if (r.status != 0 || !file_exists(work + "/" + output))
    throw CompileError("simulator: compiling " + what + " failed:\n" + diagnostics(r));
}

// Path of the support object for `options`, built on first use (atomically: a private
// directory, then rename, so concurrent processes at worst both build it).
std::string support_object(const Toolchain& tc, const CompileOptions& options, const std::string& dir) {
  std::vector<std::string> flags;
  support_flags(flags, options);
  std::string key = tc.version + '\n' + shim_hash() + '\n' + kSupportSource;
  for (const std::string& f : flags) key += f + '\n';
  const std::string path = dir + "/support-" + sha256_hex(key) + ".o";
  if (file_exists(path)) return path;
  const std::string work = path + ".tmp-" + unique_suffix() + ".d";
  TempFiles temps;
  make_dirs(work);
  temps.add_dir(work);
  write_file(work + "/support.cpp", kSupportSource);
  std::vector<std::string> argv = tc.cc.empty() ? tc.cxx : tc.cc;
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* f : {"support.cpp", "-o", "support.o"}) argv.push_back(f);
  compile_in(work, argv, tc, "the simulator's support object", "support.o");
  const std::string built = work + "/support.o";
  if (std::rename(built.c_str(), path.c_str()) != 0 && !file_exists(path))
    throw CompileError("simulator: cannot move the support object to " + path + ": " + std::strerror(errno));
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
  const std::string path = dir + "/shim-" + sha256_hex(key) + ".pch";
  if (file_exists(path)) return path;
  const std::string work = path + ".tmp-" + unique_suffix() + ".d";
  TempFiles temps;
  make_dirs(work);
  temps.add_dir(work);
  std::vector<std::string> argv = tc.cc;
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a : {std::string("-x"), std::string("c++-header"), shim_dir() + "/metal_stdlib",
                               std::string("-o"), std::string("shim.pch")})
    argv.push_back(a);
  compile_in(work, argv, tc, "the shim's precompiled header", "shim.pch");
  const std::string built = work + "/shim.pch";
  if (std::rename(built.c_str(), path.c_str()) != 0 && !file_exists(path))
    throw CompileError("simulator: cannot move the precompiled header to " + path + ": " + std::strerror(errno));
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
    RunResult r = run(with, compiler_env(tc), cwd);
    if (r.status == 0 || r.output.find("precompiled header") == std::string::npos) return r;
  }
  return run(argv, compiler_env(tc), cwd);
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

const SimTarget& sim_target() {
  static const SimTarget target = choose_target(is_zig(find_toolchain()), !find_toolchain().cc.empty());
  return target;
}

std::string build_fingerprint(const CompileOptions& options) {
  std::vector<std::string> argv;
  build_flags(argv, options);
  std::string out;
  for (const auto& a : argv) out += a + '\n';
  if (!find_toolchain().cc.empty()) {
    out += "link:\n";
    for (const auto& a : link_flags(options)) out += a + '\n';
  }
  return out;
}

void compile_shared_object(const std::string& cpp, const std::string& out_path, const CompileOptions& options) {
  const Toolchain& tc = find_toolchain();
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
  write_file(src, cpp);

  const std::string support = support_object(tc, options, dir);
  RunResult r;
  if (!tc.cc.empty()) {  // direct mode: clang -c with the shim's PCH, then ld.lld
    std::vector<std::string> argv = tc.cc;
    build_flags(argv, options);
    const size_t n = argv.size();
    r = run_with_pch(tc, argv, tc.cc.size(), n, dir, work, {"kernel.cpp", "-o", "kernel.o"});
    if (r.status == 0) {
      std::vector<std::string> link = tc.ld;
      for (const std::string& f : link_flags(options)) link.push_back(f);
      for (const std::string& a : {std::string("kernel.o"), support, std::string("-o"), std::string("kernel.so")})
        link.push_back(a);
      r = run(link, compiler_env(tc), work);
    }
  } else {
    std::vector<std::string> argv = tc.cxx;
    build_flags(argv, options);
    // `-x none` ends `-x c++`: the support object is an object file.
    for (const std::string& a : {std::string("kernel.cpp"), std::string("-x"), std::string("none"), support,
                                 std::string("-o"), std::string("kernel.so")})
      argv.push_back(a);
    r = run(argv, compiler_env(tc), work);
  }
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
  if (std::rename(so.c_str(), out_path.c_str()) != 0)
    throw CompileError("simulator: cannot move the compiled kernel to " + out_path + ": " + std::strerror(errno));
}

void strict_check(const std::string& cpp, const CompileOptions& options) {
  const Toolchain& tc = find_toolchain();
  TempFiles temps;
  std::string tmpdir = env("TMPDIR");
  if (tmpdir.empty()) tmpdir = "/tmp";
  remove_stale_temps(tmpdir, "tmps-strict-");
  std::string src = tmpdir + "/tmps-strict-" + unique_suffix() + ".cpp";
  temps.add(src);
  write_file(src, cpp);

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
    r = run_with_pch(tc, argv, flags_begin, argv.size(), dir, {}, {src});
  } else {
    argv.push_back(src);
    r = run(argv, compiler_env(tc));
  }
  if (r.status != 0) {
    std::string what = options.label.empty() ? std::string() : " ('" + options.label + "')";
    throw CompileError("Metal would reject this kernel" + what + ":\n" + metal_wording(diagnostics(r)));
  }
}

}  // namespace tmps::sim
