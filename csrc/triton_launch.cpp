// Launch path for Triton-compiled kernels: one C++ call per `kernel[grid](...)`.
//
// Triton calls the launcher with (gx, gy, gz, stream, function, packed_metadata,
// launch_metadata, enter_hook, exit_hook, *args) where args are all bound arguments,
// constexprs included. Converting them here (not in a Python loop) is what keeps the cached
// launch cheap (platform facts: a Python launcher costs 3.5-4.5 us more).
//
// Synchronization: Triton code reads results right after a launch without any sync call, so
// a launch is complete when it returns, on both backends:
//  - simulator: the batch executes on commit; we commit and wait (errors surface here).
//  - Metal: torch `mps` tensors live on torch's own command queue. Before the dispatch we run
//    `before_mps` (torch.mps.synchronize: inputs written by torch are done), after it we
//    commit and wait (torch then sees our writes). Correct, not fast; `sync=False` (set by the
//    driver from TRITON_MPS_LAUNCH_SYNC=0, Metal only) commits without waiting and leaves
//    synchronization to the caller (triton_mps.synchronize()).
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "py_context.h"
#include "scalar_types.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tmps {
namespace {

// A pipeline built for a Triton kernel, with the device context it launches on.
struct TritonFunction {
  std::shared_ptr<DeviceContext> ctx;
  std::shared_ptr<Pipeline> pipeline;
};

// How one bound Triton argument is passed.
struct ArgSpec {
  enum class Kind { Skip, Pointer, Scalar };
  Kind kind = Kind::Skip;
  std::string name;
  std::string msl_type;
  std::optional<ScalarType> scalar;  // Kind::Scalar
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
nb::handle interned(const char* s) { return nb::handle(PyUnicode_InternFromString(s)); }

std::string py_str(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  return nb::cast<std::string>(s);
}

uint64_t call_u64(nb::handle obj, const char* method) { return nb::cast<uint64_t>(obj.attr(method)()); }

class TritonLauncher {
 public:
  TritonLauncher(std::string kernel, std::vector<std::tuple<std::string, std::string, std::string>> specs,
                 uint32_t threads, int pack_scalars_at, nb::object fallback, nb::object before_mps, bool sync)
      : kernel_(std::move(kernel)),
        threads_(threads),
        pack_scalars_at_(pack_scalars_at),
        fallback_(std::move(fallback)),
        before_mps_(std::move(before_mps)),
        sync_(sync) {
    for (auto& [kind, name, msl_type] : specs) {
      ArgSpec s;
      s.name = name;
      s.msl_type = msl_type;
      if (kind == "skip") {
        s.kind = ArgSpec::Kind::Skip;
      } else if (kind == "pointer") {
        s.kind = ArgSpec::Kind::Pointer;
        ++num_kernel_args_;
      } else if (kind == "scalar") {
        s.kind = ArgSpec::Kind::Scalar;
        s.scalar = parse_scalar_type(msl_type);
        if (!s.scalar)
          throw InvalidArgument("kernel '" + kernel_ + "': argument '" + name + "' has MSL type '" + msl_type +
                                "', which the launcher cannot pack from a Python value");
        ++num_kernel_args_;
      } else {
        throw InvalidArgument("kernel '" + kernel_ + "': unknown argument kind '" + kind + "' for '" + name + "'");
      }
      specs_.push_back(std::move(s));
    }
    if (threads_ == 0) throw InvalidArgument("kernel '" + kernel_ + "': zero threads per threadgroup");
  }

  // (gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args)
  void call(nb::args all) {
    constexpr size_t kFixed = 9;
    if (all.size() < kFixed)
      throw InvalidArgument("kernel '" + kernel_ + "': launcher called with " + std::to_string(all.size()) +
                            " values; expected grid, stream, function, metadata and hooks first");
    const size_t nargs = all.size() - kFixed;
    if (nargs != specs_.size())
      throw InvalidArgument("kernel '" + kernel_ + "' takes " + std::to_string(specs_.size()) +
                            " arguments (constexprs included), got " + std::to_string(nargs));
    std::array<uint32_t, 3> grid{};
    for (int i = 0; i < 3; ++i) grid[i] = grid_dim(all[i], i);
    if (!nb::isinstance<TritonFunction>(all[4]))
      throw InvalidArgument("kernel '" + kernel_ + "': the function handle is a " + py_type_name(all[4]) +
                            ", not a kernel loaded by the mps driver");
    TritonFunction& fn = nb::cast<TritonFunction&>(all[4]);
    nb::handle launch_metadata = all[6], enter = all[7], exit = all[8];

    const std::shared_ptr<DeviceContext>& ctx = fn.ctx;
    std::vector<Arg> args;
    args.reserve(num_kernel_args_);
    bool uses_mps = false;
    for (size_t i = 0; i < nargs; ++i) {
      const ArgSpec& s = specs_[i];
      nb::handle obj = all[kFixed + i];
      if (s.kind == ArgSpec::Kind::Skip) continue;
      args.push_back(s.kind == ArgSpec::Kind::Pointer ? pointer_arg(obj, s, ctx, uses_mps) : scalar_arg(obj, s));
    }
    // The hooks bracket the launch itself; a launch rejected above never entered.
    if (!enter.is_none()) enter(launch_metadata);
    if (uses_mps && !before_mps_.is_none()) before_mps_();

    LaunchConfig cfg;
    cfg.threadgroups = grid;
    cfg.threads_per_group = {threads_, 1, 1};
    cfg.pack_scalars_at = pack_scalars_at_;
    const bool empty = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
    const bool timed = capture().enabled;
    std::shared_ptr<DispatchTiming> timing;
    if (empty) {
      ctx->stream->launch(fn.pipeline, args, cfg, false);  // validates; runs nothing (as on CUDA)
    } else {
      nb::gil_scoped_release release;  // the simulator executes here; other Python threads may run
      timing = ctx->stream->launch(fn.pipeline, args, cfg, timed);
      if (sync_ || ctx->device->info().is_simulator)
        ctx->stream->synchronize();
      else
        ctx->stream->commit();
    }
    if (timing) capture().timings.push_back(timing);

    if (!exit.is_none()) exit(launch_metadata);
  }

  const std::string& kernel() const { return kernel_; }
  uint32_t threads() const { return threads_; }

 private:
  std::string kernel_;
  std::vector<ArgSpec> specs_;
  size_t num_kernel_args_ = 0;
  uint32_t threads_;
  int pack_scalars_at_;
  nb::object fallback_;    // fallback(obj, name, kernel, device) -> Buffer, for numpy and other objects
  nb::object before_mps_;  // called before a launch that binds a torch `mps` tensor
  bool sync_;

  std::string who(const ArgSpec& s) const { return "kernel '" + kernel_ + "': argument '" + s.name + "'"; }

  uint32_t grid_dim(nb::handle v, int i) const {
    const char* axis = i == 0 ? "x" : i == 1 ? "y" : "z";
    nb::object idx = nb::steal(PyNumber_Index(v.ptr()));
    if (!idx.is_valid()) {
      PyErr_Clear();
      throw InvalidArgument("kernel '" + kernel_ + "': grid " + axis + " must be an integer, got " + py_type_name(v));
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
    if (overflow || x < 0 || x > 0xffffffffLL)
      throw InvalidArgument("kernel '" + kernel_ + "': grid " + axis + " = " + nb::cast<std::string>(nb::repr(v)) +
                            " is out of range [0, 2^32)");
    return static_cast<uint32_t>(x);
  }

  static Arg buffer(std::shared_ptr<RawBuffer> raw, uint64_t offset) {
    Arg a;
    a.kind = Arg::Kind::Buffer;
    a.buffer = std::move(raw);
    a.offset = offset;
    return a;
  }

  // A pointer Triton will not dereference (None, or an empty tensor): a small pooled buffer,
  // since Metal binds a real buffer at every [[buffer(n)]].
  static Arg placeholder(DeviceContext& ctx) { return buffer(ctx.pool->allocate(16), 0); }

  Arg pointer_arg(nb::handle obj, const ArgSpec& s, const std::shared_ptr<DeviceContext>& ctx, bool& uses_mps) const {
    if (nb::isinstance<BufferRef>(obj)) {
      auto& b = nb::cast<BufferRef&>(obj);
      Arg a = buffer(b.raw, b.offset);
      a.size = b.nbytes;
      return a;
    }
    if (obj.is_none()) return placeholder(*ctx);
    PyObject* tensor_type = torch_tensor_type();
    if (tensor_type && PyObject_TypeCheck(obj.ptr(), reinterpret_cast<PyTypeObject*>(tensor_type)))
      return tensor_arg(obj, s, *ctx, uses_mps);
    if (PyFloat_Check(obj.ptr()) || PyLong_Check(obj.ptr()))
      throw InvalidArgument(who(s) + " is a pointer (" + s.msl_type + "*); got the number " +
                            nb::cast<std::string>(nb::repr(obj)));
    // numpy arrays, objects with data_ptr(): the Python side knows their layouts.
    nb::object r = fallback_(obj, s.name, kernel_, nb::cast(ctx));
    if (!nb::isinstance<BufferRef>(r))
      throw InvalidArgument(who(s) + ": the pointer fallback returned a " + py_type_name(r) + ", not a Buffer");
    auto& b = nb::cast<BufferRef&>(r);
    Arg a = buffer(b.raw, b.offset);
    a.size = b.nbytes;
    return a;
  }

  Arg tensor_arg(nb::handle t, const ArgSpec& s, DeviceContext& ctx, bool& uses_mps) const {
    static nb::handle s_is_cpu = interned("is_cpu"), s_is_mps = interned("is_mps");
    const bool sim = ctx.device->info().is_simulator;
    const bool is_cpu = nb::cast<bool>(t.attr(s_is_cpu));
    const bool is_mps = !is_cpu && nb::cast<bool>(t.attr(s_is_mps));
    if (!is_cpu && !is_mps) {
      throw InvalidArgument(who(s) + " is a tensor on device '" + py_str(t.attr("device")) +
                            "'; the " + (sim ? "simulator takes CPU tensors" : "Metal device takes 'mps' tensors"));
    }
    if (is_mps && sim) {
      throw InvalidArgument(who(s) + " is an 'mps' tensor, but the kernel runs on the simulator, which takes CPU "
                            "tensors (set TRITON_MPS_DEVICE=metal on a Mac)");
    }
    nb::object storage = t.attr("untyped_storage")();
    const uint64_t storage_ptr = call_u64(storage, "data_ptr");
    const uint64_t storage_bytes = call_u64(storage, "nbytes");
    if (storage_bytes == 0) return placeholder(ctx);  // an empty tensor: nothing to address
    if (is_mps) {
      // On MPS the storage pointer is the MTLBuffer handle, not an address (platform facts).
      uses_mps = true;
      const uint64_t offset = call_u64(t, "storage_offset") * call_u64(t, "element_size");
      std::unique_ptr<RawBuffer> inner = ctx.device->wrap_native_buffer(reinterpret_cast<void*>(storage_ptr));
      // The tensor itself lives until the dispatch completed (see OwnedHostBuffer).
      auto tracked = ctx.pool->track_wrapped(inner->length());
      auto raw = std::make_shared<OwnedHostBuffer>(std::move(inner), nb::borrow(t), std::move(tracked));
      return buffer(std::move(raw), offset);
    }
    // A CPU tensor: wrap its whole storage (a kernel may address any byte of the allocation,
    // as on CUDA) and keep the tensor alive until the dispatch completed.
    const uint64_t data_ptr = call_u64(t, "data_ptr");
    if (data_ptr < storage_ptr || data_ptr - storage_ptr > storage_bytes)
      throw InvalidArgument(who(s) + ": data_ptr() is outside the tensor's storage");
    std::unique_ptr<RawBuffer> inner = ctx.device->wrap_host_memory(reinterpret_cast<void*>(storage_ptr), storage_bytes);
    auto tracked = ctx.pool->track_wrapped(storage_bytes);
    auto raw = std::make_shared<OwnedHostBuffer>(std::move(inner), nb::borrow(t), std::move(tracked));
    return buffer(std::move(raw), data_ptr - storage_ptr);
  }

  Arg scalar_arg(nb::handle v, const ArgSpec& s) const {
    const ScalarType& st = *s.scalar;
    Arg a;
    a.kind = Arg::Kind::Scalar;
    a.bytes.assign(st.size(), 0);
    ScalarValue sv = python_scalar(v, st.is_float(), who(s) + " (" + s.msl_type + ")");
    std::string err = st.store(sv, a.bytes.data());
    if (!err.empty()) throw InvalidArgument(who(s) + " (" + s.msl_type + "): " + err);
    return a;
  }
};

}  // namespace

void bind_triton_launcher(nb::module_& m) {
  // Triton keeps compiled kernels (and so our launchers, functions and devices) in module-level
  // caches that live until interpreter teardown, after nanobind's leak check runs: the
  // "leaked instances" report at exit would be noise, not a reference-counting bug.
  nb::set_leak_warnings(false);

  nb::class_<TritonFunction>(m, "TritonFunction", "A Triton kernel's pipeline on one device (the driver's `function`).")
      .def("__init__", [](TritonFunction* self, std::shared_ptr<DeviceContext> ctx, const PipelineRef& p) {
            new (self) TritonFunction{std::move(ctx), p.p};
          }, "device"_a, "pipeline"_a)
      .def_prop_ro("name", [](const TritonFunction& f) { return f.pipeline->name(); })
      .def_prop_ro("device", [](const TritonFunction& f) { return f.ctx; })
      .def_prop_ro("pipeline", [](const TritonFunction& f) { return PipelineRef{f.pipeline}; })
      .def_prop_ro("max_threads", [](const TritonFunction& f) { return f.pipeline->max_total_threads_per_threadgroup(); })
      .def("__repr__", [](const TritonFunction& f) { return "<triton_mps.TritonFunction '" + f.pipeline->name() + "'>"; });

  nb::class_<TritonLauncher>(m, "TritonLauncher",
                             "Converts Triton launch arguments and dispatches, in one call (see triton_launch.cpp).")
      .def(nb::init<std::string, std::vector<std::tuple<std::string, std::string, std::string>>, uint32_t, int,
                    nb::object, nb::object, bool>(),
           "kernel"_a, "specs"_a, "threads"_a, "pack_scalars_at"_a, "fallback"_a, "before_mps"_a, "sync"_a = true,
           "specs: one (kind, name, msl_type) per bound argument, kind 'pointer', 'scalar' or 'skip' (constexpr).")
      .def("__call__", &TritonLauncher::call)
      .def_prop_ro("kernel", &TritonLauncher::kernel)
      .def_prop_ro("threads", &TritonLauncher::threads);

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
}

}  // namespace tmps
