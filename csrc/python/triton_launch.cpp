// Launch path for Triton-compiled kernels: one C++ call per `kernel[grid](...)`.
//
// Triton calls the launcher with (gx, gy, gz, stream, function, packed_metadata,
// launch_metadata, enter_hook, exit_hook, *args) where args are all bound arguments,
// constexprs included. The launcher is a Python type whose tp_call reads that tuple directly
// (no nanobind argument conversion): Triton's own cached path costs ~6 us and the launcher
// should add well under 1 us (benchmarks/bench_launch.py).
//
// Per kernel a plan is built once (the launcher's constructor): one Slot per bound argument
// with its kind, scalar type and packed position. Per launch nothing is allocated while
// arguments are bound: grid, function and scalars are read straight from the Python objects
// into scratch space the launcher owns; a torch tensor costs one call (data_ptr()) when it is
// the tensor this argument had last time (a per-slot cache validated by a weak reference and
// the data pointer), else a few more (its storage's address and size). Static checks against
// the pipeline (argument count and kinds, Metal's limits) run through Launcher::launch once per
// pipeline; later launches check only what can change (offsets inside storage, scalar ranges).
// Only a launch that runs something builds the dispatch (which owns its buffers until done).
//
// Where a launch goes (csrc/foreign_stream.h): binding a torch `mps` tensor -> PyTorch's MPS
// stream (no wait); otherwise our own stream, waited for (Triton code reads host memory right
// after the call). `wait`: TRITON_MPS_LAUNCH_SYNC=1 waits always, =0 never.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "exceptions.h"
#include "py_context.h"
#include "scalar_types.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tmps {
namespace {

// A pipeline built for a Triton kernel, with the device context it launches on. A deferred
// function (the simulator's, backend/device.py: load_binary) gets its pipeline at its first
// launch from `resolve` (Python: () -> the pipeline, building it or joining its prebuild), so
// that Triton's and Inductor's loading of a kernel's configs does not wait for builds that can
// finish in the background while earlier configs run. A failed build raises at that launch,
// and at every later one (the function stays deferred).
struct TritonFunction {
  std::shared_ptr<DeviceContext> ctx;
  std::shared_ptr<Pipeline> pipeline;
  nb::object resolve;        // deferred: the build; None once resolved
  std::string entry;         // deferred: the kernel's name
  uint32_t max_threads = 0;  // deferred: the threadgroup limit its pipeline will have

  Pipeline& get() {
    if (!pipeline) {
      nb::object built = resolve();  // Python errors propagate as nb::python_error
      pipeline = nb::cast<const PipelineRef&>(built).p;
      if (!pipeline) throw InvalidArgument("kernel '" + entry + "': its deferred build returned no pipeline");
      resolve = nb::none();
    }
    return *pipeline;
  }
  std::string name() const { return pipeline ? pipeline->name() : entry; }
};

// Timings of launches made while capture is on (the driver's benchmarker). GIL-protected.
struct Capture {
  bool enabled = false;
  std::vector<std::shared_ptr<DispatchTiming>> timings;
};
Capture& capture() {
  static Capture c;
  return c;
}

// The profiler (triton_mps.profile()): one record per launch while on. GIL-protected.
struct ProfileRecord {
  std::string kernel;
  std::string device;
  std::array<uint32_t, 3> grid{};
  uint32_t threads = 0;
  double wall_ns = 0;  // the launcher call, on the host (includes waiting when the launch waited)
  std::string stream;  // "own", "foreign" (PyTorch's MPS stream), "none" (empty grid)
  std::shared_ptr<DispatchTiming> timing;  // device time, filled once the dispatch completed
};
struct Profile {
  bool enabled = false;
  std::vector<ProfileRecord> records;
};
Profile& profile() {
  static Profile p;
  return p;
}

std::string py_type_name(nb::handle obj) { return nb::cast<std::string>(nb::str(obj.type().attr("__name__"))); }

// torch.Tensor, once torch is imported (never imports torch itself).
// The reference is kept for the life of the process (no destructor at interpreter exit).
PyObject* torch_tensor_type() {
  static PyObject* type = nullptr;
  if (!type) {
    PyObject* modules = PySys_GetObject("modules");  // borrowed
    PyObject* torch = modules ? PyDict_GetItemString(modules, "torch") : nullptr;
    if (!torch) return nullptr;
    type = PyObject_GetAttrString(torch, "Tensor");
    if (!type) PyErr_Clear();
  }
  return type;
}

// An interned attribute name, kept for the life of the process.
PyObject* interned(const char* s) { return PyUnicode_InternFromString(s); }

std::string py_str(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  return nb::cast<std::string>(s);
}

// obj.method() as an unsigned 64-bit integer, through vectorcall (no bound-method object).
uint64_t call_u64(PyObject* obj, PyObject* method) {
  PyObject* args[2] = {nullptr, obj};
  PyObject* r = PyObject_VectorcallMethod(method, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!r) throw nb::python_error();
  const unsigned long long v = PyLong_AsUnsignedLongLong(r);
  Py_DECREF(r);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return v;
}

bool attr_bool(PyObject* obj, PyObject* name) {
  PyObject* r = PyObject_GetAttr(obj, name);
  if (!r) throw nb::python_error();
  const int v = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (v < 0) throw nb::python_error();
  return v != 0;
}

// The object a weak reference points to (borrowed), or null when it died.
PyObject* weak_target(PyObject* weak) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* o = nullptr;
  if (PyWeakref_GetRef(weak, &o) <= 0) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(o);  // the caller holds a strong reference to the candidate it compares with
  return o;
#else
  PyObject* o = PyWeakref_GetObject(weak);
  return o == Py_None ? nullptr : o;
#endif
}

// tensor.data_ptr() as a direct call of torch's C function when the tensor's type does not
// override it (METH_NOARGS method descriptor): skips the method lookup and the vectorcall
// machinery, the largest per-argument cost left on the cached path. Cached for the last type.
class DataPtrCall {
 public:
  uint64_t operator()(PyObject* t, PyObject* name) {
    PyTypeObject* type = Py_TYPE(t);
    if (type != type_) resolve(type, name);
    if (!meth_) return call_method(t, name);
    PyObject* r = meth_(t, nullptr);
    if (!r) throw nb::python_error();
    const unsigned long long v = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
    return v;
  }

 private:
  PyTypeObject* type_ = nullptr;  // strong (kept for the life of the process: a freed type's address may be reused)
  PyCFunction meth_ = nullptr;

  void resolve(PyTypeObject* type, PyObject* name) {
    Py_INCREF(type);
    Py_XDECREF(type_);
    type_ = type;
    meth_ = nullptr;
    PyObject* d = _PyType_Lookup(type, name);  // borrowed, no error set
    if (d && Py_IS_TYPE(d, &PyMethodDescr_Type)) {
      PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(d)->d_method;
      if ((def->ml_flags & (METH_NOARGS | METH_VARARGS | METH_KEYWORDS | METH_FASTCALL | METH_O)) == METH_NOARGS)
        meth_ = def->ml_meth;
    }
  }
  static uint64_t call_method(PyObject* obj, PyObject* method) { return call_u64(obj, method); }
};

struct Names {
  PyObject* data_ptr = interned("data_ptr");
  PyObject* untyped_storage = interned("untyped_storage");
  PyObject* nbytes = interned("nbytes");
  PyObject* storage_offset = interned("storage_offset");
  PyObject* element_size = interned("element_size");
  PyObject* numel = interned("numel");
  PyObject* is_cpu = interned("is_cpu");
  PyObject* is_mps = interned("is_mps");
};
const Names& names() {
  static const Names* n = new Names();  // never freed: interned strings live as long as Python
  return *n;
}

// The memory a torch tensor argument binds: one rule for every path (Triton launches here; the
// MSL Kernel and binding.py through _core.torch_tensor_region). A tensor binds its whole
// untyped storage with the kernel's pointer at data_ptr() (CUDA's rule: a kernel may address
// any byte of the allocation). An `mps` storage's data_ptr() is its MTLBuffer handle, not an
// address, and data_ptr() lies storage_offset() * element_size() bytes into it (platform facts).
// A tensor through which nothing can be addressed (an empty storage, or a zero-element view
// whose data_ptr() lies outside its storage, as torch gives x[8:]) binds Empty: a placeholder
// buffer of no bytes on the simulator, so memcheck reports any access through it.
struct TensorRegion {
  enum class Kind { Empty, Host, Native };
  Kind kind = Kind::Empty;
  uint64_t base = 0;    // Host: the storage's address; Native: its MTLBuffer handle
  uint64_t bytes = 0;   // the storage's size (Host, Native)
  uint64_t offset = 0;  // bytes from the storage's start to data_ptr()
  bool mps = false;     // an `mps` tensor (also when Empty): the launch goes to PyTorch's stream
};

// The region torch tensor `t` (data_ptr() == `data_ptr`) binds on a device (`simulator` or
// Metal); throws InvalidArgument starting with `where()` for a tensor that cannot be bound.
// (`where` names the argument only when needed: a launch binding a new tensor pays nothing for it.)
template <class Where>
TensorRegion torch_tensor_region(PyObject* t, uint64_t data_ptr, bool simulator, const Where& where) {
  const Names& nm = names();
  const bool is_cpu = attr_bool(t, nm.is_cpu);
  const bool is_mps = !is_cpu && attr_bool(t, nm.is_mps);
  if (!is_cpu && !is_mps) {
    throw InvalidArgument(where() + " is a tensor on device '" + py_str(nb::handle(t).attr("device")) + "'; the " +
                          (simulator ? "simulator takes CPU tensors" : "Metal device takes 'mps' and CPU tensors"));
  }
  if (is_mps && simulator) {
    throw InvalidArgument(where() + " is an 'mps' tensor, but the kernel runs on the simulator, which takes CPU "
                          "tensors (set TRITON_MPS_DEVICE=metal on a Mac)");
  }
  PyObject* self[2] = {nullptr, t};
  nb::object storage = nb::steal(
      PyObject_VectorcallMethod(nm.untyped_storage, self + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
  if (!storage.is_valid()) throw nb::python_error();
  TensorRegion r;
  r.base = call_u64(storage.ptr(), nm.data_ptr);
  r.bytes = call_u64(storage.ptr(), nm.nbytes);
  std::string outside;  // why data_ptr() is not in the storage
  if (is_mps) {
    const uint64_t index = call_u64(t, nm.storage_offset);
    r.offset = index * call_u64(t, nm.element_size);
    if (r.offset > r.bytes)
      outside = "storage_offset() " + std::to_string(index) + " (" + std::to_string(r.offset) +
                " bytes) is outside the tensor's storage of " + std::to_string(r.bytes) + " bytes";
  } else {
    r.offset = data_ptr - r.base;
    if (data_ptr < r.base || r.offset > r.bytes) {
      char range[160];
      std::snprintf(range, sizeof range, "data_ptr() 0x%llx is outside the tensor's storage [0x%llx, 0x%llx)",
                    static_cast<unsigned long long>(data_ptr), static_cast<unsigned long long>(r.base),
                    static_cast<unsigned long long>(r.base + r.bytes));
      outside = range;
    }
  }
  if (!outside.empty()) {
    const uint64_t numel = call_u64(t, nm.numel);
    if (numel != 0)
      throw InvalidArgument(where() + ": " + outside + ", and the tensor has " + std::to_string(numel) +
                            " elements (only a tensor without elements may point elsewhere)");
    r = TensorRegion{};  // nothing can be addressed through it
  } else if (r.bytes != 0) {
    r.kind = is_mps ? TensorRegion::Kind::Native : TensorRegion::Kind::Host;
  } else {
    r = TensorRegion{};
  }
  r.mps = is_mps;
  return r;
}

// What a pointer through which nothing may be addressed binds (an empty tensor, None): on the
// simulator a buffer of 0 bytes, so that memcheck reports any access; Metal binds a small real
// buffer at every [[buffer(n)]] (16 bytes from the pool).
std::shared_ptr<RawBuffer> empty_binding(DeviceContext& ctx) {
  if (ctx.device->info().is_simulator) {
    alignas(16) static unsigned char nothing[16];
    return std::shared_ptr<RawBuffer>(ctx.device->wrap_host_memory(nothing, 0));
  }
  return ctx.pool->allocate(16);
}

// How one bound Triton argument is passed; built once per kernel.
struct Slot {
  enum class Kind { Skip, Pointer, Scalar };
  Kind kind = Kind::Skip;
  std::string name;
  std::string msl_type;
  std::optional<ScalarType> scalar;  // Kind::Scalar
  size_t arg = 0;                    // index among the kernel's (non-skip) arguments

  // Pointer slots: the torch tensor bound last time (weak), and the region it binds.
  PyObject* weak = nullptr;
  uint64_t data_ptr = 0;
  TensorRegion region;
};

// One kernel argument of the current launch (scratch owned by the launcher, reused).
struct Bound {
  enum class What { Host, Native, Buffer, Placeholder, Scalar };
  What what = What::Scalar;
  PyObject* owner = nullptr;  // borrowed for the duration of the call (the tensor)
  uint64_t base = 0;          // Host: address; Native: MTLBuffer handle
  uint64_t bytes = 0;         // Host: length of the memory at base
  uint64_t offset = 0;
  uint64_t size = 0;  // Buffer: bytes usable from offset
  std::shared_ptr<RawBuffer> buffer;  // Buffer
  std::array<uint8_t, 16> scalar{};
  uint8_t scalar_size = 0;
};

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

class TritonLauncher {
 public:
  TritonLauncher(std::string kernel, std::vector<std::tuple<std::string, std::string, std::string>> specs,
                 uint32_t threads, int pack_scalars_at, nb::object fallback, nb::object before_mps, int wait)
      : kernel_(std::move(kernel)),
        threads_(threads),
        pack_scalars_at_(pack_scalars_at),
        fallback_(std::move(fallback)),
        before_mps_(std::move(before_mps)) {
    wait_ = wait < 0 ? LaunchWait::Default : wait == 0 ? LaunchWait::Never : LaunchWait::Always;
    for (auto& [kind, name, msl_type] : specs) {
      Slot s;
      s.name = name;
      s.msl_type = msl_type;
      if (kind == "skip") {
        s.kind = Slot::Kind::Skip;
      } else if (kind == "pointer") {
        s.kind = Slot::Kind::Pointer;
        s.arg = num_args_++;
      } else if (kind == "scalar") {
        s.kind = Slot::Kind::Scalar;
        s.scalar = parse_scalar_type(msl_type);
        if (!s.scalar)
          throw InvalidArgument("kernel '" + kernel_ + "': argument '" + name + "' has MSL type '" + msl_type +
                                "', which the launcher cannot pack from a Python value");
        if (s.scalar->size() > sizeof(Bound::scalar))
          throw InvalidArgument("kernel '" + kernel_ + "': argument '" + name + "' (" + msl_type + ") is too wide");
        s.arg = num_args_++;
      } else {
        throw InvalidArgument("kernel '" + kernel_ + "': unknown argument kind '" + kind + "' for '" + name + "'");
      }
      slots_.push_back(std::move(s));
    }
    bound_.resize(num_args_);
  }

  ~TritonLauncher() {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    for (Slot& s : slots_) Py_CLEAR(s.weak);
    Py_CLEAR(last_function_);
  }

  // (gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args)
  void call(PyObject* all) {
    constexpr Py_ssize_t kFixed = 9;
    const Py_ssize_t n = PyTuple_GET_SIZE(all);
    if (n < kFixed)
      throw InvalidArgument("kernel '" + kernel_ + "': launcher called with " + std::to_string(n) +
                            " values; expected grid, stream, function, metadata and hooks first");
    if (static_cast<size_t>(n - kFixed) != slots_.size())
      throw InvalidArgument("kernel '" + kernel_ + "' takes " + std::to_string(slots_.size()) +
                            " arguments (constexprs included), got " + std::to_string(n - kFixed));
    std::array<uint32_t, 3> grid;
    for (int i = 0; i < 3; ++i) grid[i] = grid_dim(PyTuple_GET_ITEM(all, i), i);
    TritonFunction& fn = function(PyTuple_GET_ITEM(all, 4));
    // A deferred function's first launch: its build, before the profiler's clock starts (a
    // profile record times the launch; the build is compile time).
    if (!fn.pipeline) fn.get();
    const bool profiling = profile().enabled;
    const double t0 = profiling ? now_ns() : 0;
    PyObject* launch_metadata = PyTuple_GET_ITEM(all, 6);
    PyObject* enter = PyTuple_GET_ITEM(all, 7);
    PyObject* exit = PyTuple_GET_ITEM(all, 8);
    DeviceContext& ctx = *fn.ctx;
    // The scratch (bound_ and the per-slot tensor cache) belongs to the outermost call: a call
    // that starts while another is binding (another thread, switched to from Python code the
    // binding ran, e.g. the numpy fallback) binds into its own scratch and skips the cache.
    const bool reentered = busy_;
    std::vector<Bound> local;
    if (reentered) local.resize(num_args_);
    std::vector<Bound>& bound = reentered ? local : bound_;
    struct Release {
      TritonLauncher& self;
      bool owner;
      ~Release() {
        if (!owner) return;
        for (Bound& b : self.bound_) {
          b.owner = nullptr;  // borrowed for this call only
          if (b.buffer) b.buffer.reset();
        }
        self.busy_ = false;
      }
    } release_scratch{*this, !reentered};
    busy_ = true;

    bool uses_mps = false, uses_host_tensor = false;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.kind == Slot::Kind::Skip) continue;
      PyObject* obj = PyTuple_GET_ITEM(all, kFixed + i);
      if (s.kind == Slot::Kind::Pointer)
        bind_pointer(obj, s, bound[s.arg], fn.ctx, !reentered, uses_mps, uses_host_tensor);
      else
        bind_scalar(obj, s, bound[s.arg]);
    }
    if (uses_mps) attach_torch_stream(ctx);
    const bool foreign =
        (uses_mps || (uses_host_tensor && ctx.foreign_takes_host_tensors)) && ctx.router->foreign() != nullptr;
    const bool empty = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
    // Validated for this pipeline before: what could change was checked while binding.
    const bool revalidate = !(empty && validated_ == fn.pipeline);
    // Out of the scratch before any Python code runs (hooks may switch threads).
    std::vector<Arg> args;
    if (revalidate) args = materialize(ctx, bound);

    // The hooks bracket the launch itself; a launch rejected above never entered.
    if (enter != Py_None) call_hook(enter, launch_metadata);
    // No PyTorch stream to encode into (a torch without torch/mps.h's API): our own queue, after
    // PyTorch finished what it issued (torch.mps.synchronize), waited for unless wait=0.
    if (uses_mps && !foreign && !before_mps_.is_none()) before_mps_();

    const bool timed = capture().enabled || profiling;
    std::shared_ptr<DispatchTiming> timing;
    if (revalidate) {
      LaunchConfig cfg;
      cfg.threadgroups = grid;
      cfg.threads_per_group = {threads_, 1, 1};
      cfg.pack_scalars_at = pack_scalars_at_;
      if (empty) {
        ctx.stream->launch(fn.pipeline, args, cfg, false);  // validates; runs nothing (as on CUDA)
      } else {
        DrainReleasedOwners drain;       // once the GIL is back: owners released while it was not held
        nb::gil_scoped_release release;  // the simulator executes here; other Python threads may run
        if (foreign)
          timing = ctx.router->launch_foreign(fn.pipeline, args, cfg, timed, wait_);
        else
          timing = ctx.router->launch_own(fn.pipeline, args, cfg, timed, wait_);
      }
      validated_ = fn.pipeline;
    }
    if (timing && capture().enabled) capture().timings.push_back(timing);
    if (profiling) {
      ProfileRecord r;
      r.kernel = kernel_;
      r.device = ctx.device->info().name;
      r.grid = grid;
      r.threads = threads_;
      r.wall_ns = now_ns() - t0;
      r.stream = empty ? "none" : foreign ? "foreign" : "own";
      r.timing = timing;
      profile().records.push_back(std::move(r));
    }
    if (exit != Py_None) call_hook(exit, launch_metadata);
  }

  const std::string& kernel() const { return kernel_; }
  uint32_t threads() const { return threads_; }
  // The runtime API's `mps` launches use PyTorch's stream too (py_context.h).
  static void attach_torch(DeviceContext& ctx) { attach_torch_stream(ctx); }

 private:
  std::string kernel_;
  std::vector<Slot> slots_;
  size_t num_args_ = 0;
  uint32_t threads_;
  int pack_scalars_at_;
  nb::object fallback_;    // fallback(obj, name, kernel, device) -> Buffer: binding.bind, for other objects
  nb::object before_mps_;  // torch.mps.synchronize, for `mps` launches without PyTorch's stream
  LaunchWait wait_ = LaunchWait::Default;
  std::vector<Bound> bound_;
  bool busy_ = false;  // a call is using bound_ (see call())
  std::shared_ptr<Pipeline> validated_;  // the pipeline the plan was checked against (Launcher::launch)
  PyObject* last_function_ = nullptr;    // strong; the TritonFunction object seen last
  DataPtrCall data_ptr_;
  TritonFunction* last_fn_ = nullptr;

  std::string who(const Slot& s) const { return "kernel '" + kernel_ + "': argument '" + s.name + "'"; }

  static void call_hook(PyObject* hook, PyObject* arg) {
    PyObject* r = PyObject_Vectorcall(hook, &arg, 1, nullptr);  // (in nanobind's macOS symbol list)
    if (!r) throw nb::python_error();
    Py_DECREF(r);
  }

  TritonFunction& function(PyObject* obj) {
    if (obj == last_function_) return *last_fn_;
    if (!nb::isinstance<TritonFunction>(obj))
      throw InvalidArgument("kernel '" + kernel_ + "': the function handle is a " + py_type_name(obj) +
                            ", not a kernel loaded by the mps driver");
    TritonFunction* fn = nb::inst_ptr<TritonFunction>(obj);
    PyObject* old = last_function_;
    Py_INCREF(obj);
    last_function_ = obj;
    last_fn_ = fn;
    Py_XDECREF(old);  // last: may run arbitrary code
    return *fn;
  }

  uint32_t grid_dim(PyObject* v, int i) const {
    long long x;
    int overflow = 0;
    if (PyLong_CheckExact(v)) {
      x = PyLong_AsLongLongAndOverflow(v, &overflow);
    } else {
      nb::object idx = nb::steal(PyNumber_Index(v));
      if (!idx.is_valid()) {
        PyErr_Clear();
        throw InvalidArgument("kernel '" + kernel_ + "': grid " + axis(i) + " must be an integer, got " +
                              py_type_name(v));
      }
      x = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
    }
    if (overflow || x < 0 || x > 0xffffffffLL)
      throw InvalidArgument("kernel '" + kernel_ + "': grid " + axis(i) + " = " +
                            nb::cast<std::string>(nb::repr(nb::handle(v))) + " is out of range [0, 2^32)");
    return static_cast<uint32_t>(x);
  }
  static const char* axis(int i) { return i == 0 ? "x" : i == 1 ? "y" : "z"; }

  // --- pointers ------------------------------------------------------------------------------

  void bind_pointer(PyObject* obj, Slot& s, Bound& b, const std::shared_ptr<DeviceContext>& ctx, bool use_cache,
                    bool& uses_mps, bool& uses_host_tensor) {
    PyObject* tensor_type = torch_tensor_type();
    if (tensor_type && PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(tensor_type))) {
      if (use_cache) {
        bind_tensor(obj, s, b, *ctx, true);
        (s.region.mps ? uses_mps : uses_host_tensor) = true;
      } else {
        Slot tmp;
        tmp.name = s.name;
        tmp.msl_type = s.msl_type;
        bind_tensor(obj, tmp, b, *ctx, false);
        (tmp.region.mps ? uses_mps : uses_host_tensor) = true;
      }
      return;
    }
    b.owner = nullptr;
    if (nb::isinstance<BufferRef>(obj)) {
      auto& ref = *nb::inst_ptr<BufferRef>(obj);
      set_buffer(b, ref);
      return;
    }
    if (obj == Py_None) {
      b.what = Bound::What::Placeholder;
      return;
    }
    if (PyFloat_Check(obj) || PyLong_Check(obj))
      throw InvalidArgument(who(s) + " is a pointer (" + s.msl_type + "*); got the number " +
                            nb::cast<std::string>(nb::repr(nb::handle(obj))));
    // numpy/MLX/DLPack arrays, objects with data_ptr(): bound by the Python binder of last
    // resort (python/triton_mps/binding.py), which binds a torch tensor by torch_tensor_region too.
    nb::object r = fallback_(nb::handle(obj), s.name, kernel_, nb::cast(ctx));
    if (!nb::isinstance<BufferRef>(r))
      throw InvalidArgument(who(s) + ": the pointer fallback returned a " + py_type_name(r) + ", not a Buffer");
    set_buffer(b, *nb::inst_ptr<BufferRef>(r.ptr()));
  }

  static void set_buffer(Bound& b, const BufferRef& ref) {
    b.what = Bound::What::Buffer;
    b.buffer = ref.raw;
    b.offset = ref.offset;
    b.size = ref.nbytes;
  }

  void bind_tensor(PyObject* t, Slot& s, Bound& b, DeviceContext& ctx, bool remember) {
    const uint64_t data_ptr = data_ptr_(t, names().data_ptr);
    if (!(s.weak && weak_target(s.weak) == t && s.data_ptr == data_ptr)) read_tensor(t, s, data_ptr, ctx, remember);
    b.owner = t;
    b.buffer.reset();
    const TensorRegion& r = s.region;
    b.what = r.kind == TensorRegion::Kind::Native ? Bound::What::Native
             : r.kind == TensorRegion::Kind::Host ? Bound::What::Host
                                                  : Bound::What::Placeholder;  // nothing to address
    b.base = r.base;
    b.bytes = r.bytes;
    b.offset = r.offset;
  }

  // A cache miss: the region tensor `t` binds (torch_tensor_region), remembered for the slot.
  void read_tensor(PyObject* t, Slot& s, uint64_t data_ptr, DeviceContext& ctx, bool remember) {
    Py_CLEAR(s.weak);
    s.region = torch_tensor_region(t, data_ptr, ctx.device->info().is_simulator, [&] { return who(s); });
    s.data_ptr = data_ptr;
    if (!remember) return;
    s.weak = PyWeakref_NewRef(t, nullptr);  // no cache for objects without weak references
    if (!s.weak) PyErr_Clear();
  }

  // --- scalars -------------------------------------------------------------------------------

  void bind_scalar(PyObject* v, const Slot& s, Bound& b) const {
    const ScalarType& st = *s.scalar;
    b.what = Bound::What::Scalar;
    b.owner = nullptr;
    b.scalar_size = static_cast<uint8_t>(st.size());
    b.scalar.fill(0);
    ScalarValue sv;
    if (st.is_float() && PyFloat_CheckExact(v)) {
      sv = ScalarValue::from_double(PyFloat_AS_DOUBLE(v));
    } else if (!st.is_float() && PyLong_CheckExact(v)) {
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      sv = overflow == 0 ? ScalarValue::from_signed(x) : python_scalar(v, false, who(s) + " (" + s.msl_type + ")");
    } else {
      sv = python_scalar(v, st.is_float(), who(s) + " (" + s.msl_type + ")");
    }
    std::string err = st.store(sv, b.scalar.data());
    if (!err.empty()) throw InvalidArgument(who(s) + " (" + s.msl_type + "): " + err);
  }

  // --- the dispatch's arguments (launches that run or are validated) --------------------------

  static std::vector<Arg> materialize(DeviceContext& ctx, const std::vector<Bound>& bound) {
    std::vector<Arg> args(bound.size());
    for (size_t i = 0; i < bound.size(); ++i) {
      const Bound& b = bound[i];
      Arg& a = args[i];
      switch (b.what) {
        case Bound::What::Scalar:
          a.kind = Arg::Kind::Scalar;
          a.bytes.assign(b.scalar.begin(), b.scalar.begin() + b.scalar_size);
          break;
        case Bound::What::Buffer:
          a.buffer = b.buffer;
          a.offset = b.offset;
          a.size = b.size;
          break;
        case Bound::What::Placeholder:  // None, or an empty tensor: nothing may be addressed through it
          a.buffer = empty_binding(ctx);
          break;
        case Bound::What::Host: {
          std::unique_ptr<RawBuffer> inner = ctx.device->wrap_host_memory(reinterpret_cast<void*>(b.base), b.bytes);
          // The tensor itself lives until the dispatch completed (see OwnedHostBuffer); the
          // pool counts the wrapped bytes meanwhile (memory_pool()).
          a.buffer = std::make_shared<OwnedHostBuffer>(std::move(inner), nb::borrow(b.owner),
                                                       ctx.pool->track_wrapped(b.bytes));
          a.offset = b.offset;
          break;
        }
        case Bound::What::Native: {
          std::unique_ptr<RawBuffer> inner = ctx.device->wrap_native_buffer(reinterpret_cast<void*>(b.base));
          const uint64_t length = inner->length();
          a.buffer = std::make_shared<OwnedHostBuffer>(std::move(inner), nb::borrow(b.owner),
                                                       ctx.pool->track_wrapped(length));
          a.offset = b.offset;
          break;
        }
      }
    }
    return args;
  }

  // PyTorch's MPS stream, looked up once per device on its first `mps` launch.
  static void attach_torch_stream(DeviceContext& ctx) {
    if (ctx.foreign_looked_up) return;
    ctx.foreign_looked_up = true;
    // The emulated Metal device (Linux) has no PyTorch MPS stream; its tests attach a fake one.
    if (ctx.router->foreign() || ctx.device->info().is_simulator || ctx.device->info().is_emulated) return;
    std::string library;
    try {
      nb::object torch = nb::module_::import_("torch");
      nb::object os_path = nb::module_::import_("os.path");
      nb::object dir = os_path.attr("dirname")(torch.attr("__file__"));
      library = nb::cast<std::string>(os_path.attr("join")(dir, "lib", "libtorch_cpu.dylib"));
    } catch (const std::exception&) {
      PyErr_Clear();
    }
    std::string error;
    TorchMpsApi api = resolve_torch_mps_api(library, &error);
    if (!api.complete()) return;  // an old torch: launches keep waiting on our own queue (see README)
    if (auto stream = make_torch_mps_stream(ctx.device, api)) ctx.router->set_foreign(std::move(stream));
  }
};

// --- Python type: tp_call straight into TritonLauncher::call ------------------------------------


// The module's exception mapping (exceptions.cpp), for this raw CPython call slot.
void raise_current() { set_python_error_from_current(); }

PyObject* launcher_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (kwargs && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "the mps launcher takes positional arguments only");
    return nullptr;
  }
  try {
    nb::inst_ptr<TritonLauncher>(self)->call(args);
  } catch (...) {
    raise_current();
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyType_Slot launcher_slots[] = {{Py_tp_call, reinterpret_cast<void*>(launcher_tp_call)}, {0, nullptr}};

}  // namespace

void attach_torch_stream(DeviceContext& ctx) { TritonLauncher::attach_torch(ctx); }

void bind_triton_launcher(nb::module_& m) {
  // Triton keeps compiled kernels (and so our launchers, functions and devices) in module-level
  // caches that live until interpreter teardown, after nanobind's leak check runs: the
  // "leaked instances" report at exit would be noise, not a reference-counting bug.
  nb::set_leak_warnings(false);

  nb::class_<TritonFunction>(m, "TritonFunction", "A Triton kernel's pipeline on one device (the driver's `function`).")
      .def("__init__", [](TritonFunction* self, std::shared_ptr<DeviceContext> ctx, const PipelineRef& p) {
            new (self) TritonFunction{std::move(ctx), p.p, nb::none(), {}, 0};
          }, "device"_a, "pipeline"_a)
      .def("__init__", [](TritonFunction* self, std::shared_ptr<DeviceContext> ctx, std::string name,
                          uint32_t max_threads, nb::callable resolve) {
            new (self) TritonFunction{std::move(ctx), nullptr, std::move(resolve), std::move(name), max_threads};
          }, "device"_a, "name"_a, "max_threads"_a, "resolve"_a,
          "A deferred function: `resolve()` returns its pipeline at the first launch (or `.pipeline`).")
      .def_prop_ro("name", [](const TritonFunction& f) { return f.name(); })
      .def_prop_ro("device", [](const TritonFunction& f) { return f.ctx; })
      .def_prop_ro("pipeline", [](TritonFunction& f) {
            f.get();
            return PipelineRef{f.pipeline};
          })
      .def_prop_ro("deferred", [](const TritonFunction& f) { return !f.pipeline; },
                   "True until a deferred function's pipeline is built (its first launch)")
      .def_prop_ro("max_threads", [](const TritonFunction& f) {
            return f.pipeline ? f.pipeline->max_total_threads_per_threadgroup() : f.max_threads;
          })
      .def("__repr__", [](const TritonFunction& f) { return "<triton_mps.TritonFunction '" + f.name() + "'>"; });

  nb::class_<TritonLauncher>(m, "TritonLauncher", nb::type_slots(launcher_slots),
                             "Converts Triton launch arguments and dispatches, in one call (see triton_launch.cpp).")
      .def(nb::init<std::string, std::vector<std::tuple<std::string, std::string, std::string>>, uint32_t, int,
                    nb::object, nb::object, int>(),
           "kernel"_a, "specs"_a, "threads"_a, "pack_scalars_at"_a, "fallback"_a, "before_mps"_a = nb::none(),
           "wait"_a = -1,
           "specs: one (kind, name, msl_type) per bound argument, kind 'pointer', 'scalar' or 'skip' (constexpr). "
           "wait: -1 default (own stream waits, PyTorch's MPS stream does not), 0 never, 1 always.")
      .def_prop_ro("kernel", &TritonLauncher::kernel)
      .def_prop_ro("threads", &TritonLauncher::threads);

  m.def("torch_tensor_region", [](nb::handle t, DeviceContext& device, const std::string& where) {
        const TensorRegion r = torch_tensor_region(t.ptr(), call_u64(t.ptr(), names().data_ptr),
                                                   device.device->info().is_simulator, [&] { return where; });
        const char* kind = r.kind == TensorRegion::Kind::Host     ? "host"
                           : r.kind == TensorRegion::Kind::Native ? "native"
                                                                  : "empty";
        return nb::make_tuple(kind, r.base, r.bytes, r.offset);
      }, "tensor"_a, "device"_a, "where"_a,
      "The memory torch tensor `tensor` binds on `device` (the rule: triton_launch.cpp torch_tensor_region): "
      "(kind, base, nbytes, offset), kind 'host' (base: an address), 'native' (base: an MTLBuffer handle) or "
      "'empty' (nothing addressable: bind empty_binding(device)); offset: bytes from base to data_ptr(). Raises "
      "InvalidArgument starting with `where` for a tensor that cannot be bound.");
  m.def("empty_binding", [](DeviceContext& device) {
        std::shared_ptr<RawBuffer> raw = empty_binding(device);
        const uint64_t n = device.device->info().is_simulator ? 0 : raw->length();
        return BufferRef{std::move(raw), 0, n};
      }, "device"_a,
      "The buffer a pointer through which nothing may be addressed binds (an empty tensor): 0 bytes on the "
      "simulator (memcheck reports any access), a small pooled buffer on Metal.");

  m.def("triton_timing_capture", [](bool on) {
    capture().enabled = on;
    capture().timings.clear();
  }, "on"_a, "Record GPU timings of every Triton launch from now on (the benchmarker); clears the record.");
  m.def("triton_take_timings", [] {
    nb::list out;
    for (auto& t : capture().timings) out.append(nb::cast(TimingRef{t}));
    capture().timings.clear();
    return out;
  }, "Timings recorded since the last call (filled once their batch completed).");

  m.def("triton_profile", [](bool on) { profile().enabled = on; }, "on"_a,
        "Record every Triton launch from now on (triton_mps.profile()).");
  m.def("triton_profiling", [] { return profile().enabled; });
  m.def("triton_take_profile", [] {
    nb::list out;
    for (auto& r : profile().records) {
      nb::object timing = r.timing ? nb::cast(TimingRef{r.timing}) : nb::none();
      out.append(nb::make_tuple(r.kernel, r.device, nb::make_tuple(r.grid[0], r.grid[1], r.grid[2]), r.threads,
                                r.wall_ns, r.stream, timing));
    }
    profile().records.clear();
    return out;
  }, "Launches recorded since the last call: (kernel, device, grid, threads, wall_ns, stream, timing or None).");
}

}  // namespace tmps
