// The simulator's toolchain: finding a compiler for kernels (zig's clang, a system clang++ or
// $TRITON_MPS_SIM_CXX) and running tools as child processes (argv passed directly, no shell).
#include "toolchain.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#ifdef __linux__
#include <sched.h>
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "pipeline_cache.h"
#include "sha256.h"

#ifdef __APPLE__
#include <crt_externs.h>
static char** process_environ() { return *_NSGetEnviron(); }
#else
extern char** environ;
static char** process_environ() { return environ; }
#endif

namespace tmps::sim {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

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
    RunResult v = run_process({zig, "version"});
    RunResult cc = run_process({zig, "cc", "--version"});
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
  RunResult r = run_process({clang, "--version"});
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
    RunResult r = run_process(ver);
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

std::mutex g_toolchain_mu;
std::optional<Toolchain> g_toolchain;

constexpr int kSamePriority = 1000;  // not a nice value: the child keeps ours

}  // namespace

#ifdef __linux__
namespace {

struct SpawnArgs {
  const char* exe;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: ours
  int out_fd;       // stdout and stderr
  pid_t parent;
  sigset_t mask;    // the parent's signal mask, restored before exec
  int priority;     // the child's nice value (setpriority), or kSamePriority
};

// The child of run_process's clone: it runs on its own stack in our address space until
// execve, so it makes only system calls (no allocation, no locks).
int spawn_child(void* p) {
  const SpawnArgs& a = *static_cast<const SpawnArgs*>(p);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a.parent) _exit(127);  // the parent died before prctl
  // Our handlers (faults, Ctrl-C) must not run here: back to the defaults, then unblock.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction cur {};
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, nullptr, &cur) != 0) continue;
    if (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN) sigaction(sig, &dfl, nullptr);
  }
  sigprocmask(SIG_SETMASK, &a.mask, nullptr);
  if (a.priority != kSamePriority) setpriority(PRIO_PROCESS, 0, a.priority);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(a.out_fd, 1);
  dup2(a.out_fd, 2);
  if (a.cwd && chdir(a.cwd) != 0) _exit(126);
  execve(a.exe, a.argv, a.envp);
  _exit(127);
}
}  // namespace
#endif

namespace {
thread_local int t_child_nice = 0;  // ChildNice's delta for this thread's children

// The nice value for a child of this thread, from ours (errno tells -1 from an error).
int child_priority() {
  errno = 0;
  const int ours = getpriority(PRIO_PROCESS, 0);
  if (t_child_nice == 0 || (ours == -1 && errno != 0)) return kSamePriority;
  return std::min(19, ours + t_child_nice);
}
}  // namespace

ChildNice::ChildNice(int delta) : saved_(t_child_nice) { t_child_nice = delta; }
ChildNice::~ChildNice() { t_child_nice = saved_; }
int ChildNice::current() { return t_child_nice; }

RunResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                      const std::string& cwd) {
  const int priority = child_priority();
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
  // clone(CLONE_VM | CLONE_VFORK) + exec, as glibc's posix_spawn does, rather than fork: a fork
  // copies the page tables of a process that holds torch and a Python heap, and every later
  // write of the parent then takes a copy-on-write fault. Measured from a test process: 60-90 ms
  // per spawn with fork against 7-12 ms, and a kernel build spawns two or three tools. Not
  // posix_spawn itself: the child must set its parent-death signal (spawn_child).
  const std::string exe = which(argv[0]);
  if (exe.empty()) {
    close(fds[0]);
    close(fds[1]);
    r.output = "cannot run " + argv[0] + ": not found";
    return r;
  }
  SpawnArgs sa{exe.c_str(), args.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(), fds[1], getpid(), {},
               priority};
  // All signals blocked across the clone: the child shares our memory until it execs, so none
  // of our handlers may run in it (it restores default dispositions, then this mask).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &sa.mask);
  std::vector<char> stack(64 * 1024);
  pid = clone(spawn_child, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &sa);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &sa.mask, nullptr);
  const int rc = pid < 0 ? clone_errno : 0;
#else
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0 && priority != kSamePriority) setpriority(PRIO_PROCESS, pid, priority);
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
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r;
}

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

bool is_zig(const Toolchain& t) {
  const std::string& exe = t.cxx.empty() ? std::string() : t.cxx[0];
  std::string base = exe.substr(exe.find_last_of('/') == std::string::npos ? 0 : exe.find_last_of('/') + 1);
  return base == "zig" || base == "zig.exe";
}

std::string run_capture(const std::vector<std::string>& argv, int& status) {
  RunResult r = run_process(argv);
  status = r.status;
  return r.output;
}

const Toolchain& find_toolchain() {
  std::lock_guard<std::mutex> lock(g_toolchain_mu);
  if (!g_toolchain) g_toolchain = discover();  // a failure is not cached: the user may install one
  return *g_toolchain;
}

}  // namespace tmps::sim
