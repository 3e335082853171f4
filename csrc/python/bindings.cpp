// Python bindings (nanobind): devices, buffers, pipelines, launches, pool statistics.
// Kept thin: argument conversion and exception mapping only; policy lives in the core.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "device.h"
#include "launcher.h"
#include "pipeline_cache.h"
#include "pool.h"
#include "exceptions.h"
#include "py_context.h"
#include "scalar_types.h"
#include "sim/scheduler.h"
#include "sim/simd_collapse.h"
#include "sim/sim_compiler.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tmps {
namespace {

MathMode parse_math_mode(const std::string& s) {
  if (s == "safe") return MathMode::Safe;
  if (s == "relaxed") return MathMode::Relaxed;
  if (s == "fast") return MathMode::Fast;
  throw InvalidArgument("math_mode must be 'safe', 'relaxed' or 'fast', got '" + s + "'");
}

// Sizes and offsets arrive as Python ints: a negative one is the caller's mistake, reported
// as such (not as nanobind's "incompatible function arguments").
uint64_t byte_count(int64_t v, const char* what) {
  if (v < 0) throw InvalidArgument(std::string(what) + " must be a byte count >= 0, got " + std::to_string(v));
  return static_cast<uint64_t>(v);
}

// Warnings the core collected during a call (e.g. an unusable cache): Python RuntimeWarnings.
void issue_core_warnings() {
  for (const std::string& w : take_warnings())
    if (PyErr_WarnEx(PyExc_RuntimeWarning, w.c_str(), 1) < 0) throw nb::python_error();
}

nb::dict info_dict(const DeviceInfo& i) {
  nb::dict d;
  d["name"] = i.name;
  d["registry_id"] = i.registry_id;
  d["gpu_family"] = i.gpu_family;
  d["generation"] = i.generation;
  d["max_threads_per_threadgroup"] = i.max_threads_per_threadgroup;
  d["max_threadgroup_memory"] = i.max_threadgroup_memory;
  d["recommended_working_set"] = i.recommended_working_set;
  d["unified_memory"] = i.unified_memory;
  d["simd_width"] = i.simd_width;
  d["max_buffer_bindings"] = i.max_buffer_bindings;
  d["max_buffer_length"] = i.max_buffer_length;
  d["is_simulator"] = i.is_simulator;
  d["is_emulated"] = i.is_emulated;
  d["cpu_threads"] = i.cpu_threads;
  d["msl_version"] = i.msl_version;
  return d;
}

const char* kind_name(ParamInfo::Kind k) {
  switch (k) {
    case ParamInfo::Kind::Buffer: return "buffer";
    case ParamInfo::Kind::Threadgroup: return "threadgroup";
    case ParamInfo::Kind::Position: return "position";
  }
  return "?";
}

const char* space_name(ParamInfo::Space s) {
  switch (s) {
    case ParamInfo::Space::Device: return "device";
    case ParamInfo::Space::Constant: return "constant";
    case ParamInfo::Space::Threadgroup: return "threadgroup";
    case ParamInfo::Space::Thread: return "thread";
  }
  return "?";
}

// Convert one Python launch argument for `param` (may be null when the caller passed too many;
// the launcher then reports the count).
Arg to_arg(nb::handle obj, const ParamInfo* param, const std::string& kernel) {
  Arg a;
  if (nb::isinstance<BufferRef>(obj)) {
    auto& b = nb::cast<BufferRef&>(obj);
    a.kind = Arg::Kind::Buffer;
    a.buffer = b.raw;
    a.offset = b.offset;
    a.size = b.nbytes;
    return a;
  }
  a.kind = Arg::Kind::Scalar;
  if (PyBytes_Check(obj.ptr()) || PyByteArray_Check(obj.ptr())) {  // a struct, packed by the caller
    const char* data = PyBytes_Check(obj.ptr()) ? PyBytes_AsString(obj.ptr()) : PyByteArray_AsString(obj.ptr());
    size_t n = PyBytes_Check(obj.ptr()) ? PyBytes_Size(obj.ptr()) : PyByteArray_Size(obj.ptr());
    a.bytes.assign(data, data + n);
    return a;
  }
  if (!param) {  // count mismatch: any bytes will do, the launcher raises the real error
    a.bytes.assign(4, 0);
    return a;
  }
  std::string where = "parameter '" + param->name + "' (" + param->type + ") of kernel '" + kernel + "'";
  if (param->is_pointer) {
    throw InvalidArgument(where + " is a " + space_name(param->space) + " buffer; got " +
                          nb::cast<std::string>(nb::str(obj.type().attr("__name__"))) +
                          " (pass a triton_mps buffer, numpy array or tensor)");
  }
  auto st = parse_scalar_type(param->type);
  if (!st) {
    throw InvalidArgument(where + ": cannot convert a Python value to '" + param->type +
                          "'; pass bytes laid out as the struct, or a buffer");
  }
  std::vector<nb::handle> items;
  nb::object seq;
  if (st->lanes == 1) {
    items.push_back(obj);
  } else {
    if (!PySequence_Check(obj.ptr()))
      throw InvalidArgument(where + ": expected a sequence of " + std::to_string(st->lanes) + " values");
    seq = nb::steal(PySequence_Fast(obj.ptr(), "expected a sequence"));
    if (!seq.is_valid()) throw nb::python_error();
    size_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    if (n != st->lanes)
      throw InvalidArgument(where + ": expected " + std::to_string(st->lanes) + " values, got " + std::to_string(n));
    for (size_t i = 0; i < n; ++i) items.push_back(PySequence_Fast_GET_ITEM(seq.ptr(), i));
  }
  a.bytes.assign(st->size(), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    nb::handle v = items[i];
    ScalarValue sv = python_scalar(v, st->is_float(), where);
    std::string err = st->store(sv, a.bytes.data() + i * st->element_size);
    if (!err.empty()) throw InvalidArgument(where + ": " + err);
  }
  if (param->type_size && param->type_size != a.bytes.size()) a.bytes.resize(param->type_size, 0);
  return a;
}

// triton_mps.Buffer, Pipeline and Timing: views of the core objects a device hands out.
void bind_buffers_and_pipelines(nb::module_& m) {
  nb::class_<BufferRef>(m, "Buffer")
      .def_prop_ro("nbytes", [](const BufferRef& b) { return b.nbytes; })
      .def_prop_ro("offset", [](const BufferRef& b) { return b.offset; })
      .def_prop_ro("address", &BufferRef::address, "CPU address of the first byte (unified memory)")
      .def_prop_ro("native_handle", [](BufferRef& b) { return reinterpret_cast<uintptr_t>(b.raw->native_handle()); })
      .def("view", [](const BufferRef& b, int64_t offset_, int64_t nbytes_) {
            const uint64_t offset = byte_count(offset_, "view(): offset"), nbytes = byte_count(nbytes_, "view(): nbytes");
            if (offset > b.nbytes || nbytes > b.nbytes - offset)
              throw InvalidArgument("view [" + std::to_string(offset) + ", +" + std::to_string(nbytes) +
                                    ") is outside the buffer of " + std::to_string(b.nbytes) + " bytes");
            return BufferRef{b.raw, b.offset + offset, nbytes};
          }, "offset"_a, "nbytes"_a)
      .def("bytes_view", [](nb::handle self) {
            auto& b = nb::cast<BufferRef&>(self);
            auto* p = reinterpret_cast<uint8_t*>(b.address());
            return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(p, {static_cast<size_t>(b.nbytes)}, self);
          }, "A writable uint8 numpy view of the bytes (no copy; keeps the buffer alive).")
      .def("__repr__", [](const BufferRef& b) {
            if (!b.raw->contents()) return "<triton_mps.Buffer " + std::to_string(b.nbytes) + " bytes, GPU-only storage>";
            return "<triton_mps.Buffer " + std::to_string(b.nbytes) + " bytes at 0x" +
                   [](uintptr_t a) { char s[32]; std::snprintf(s, sizeof s, "%llx", (unsigned long long)a); return std::string(s); }(b.address()) + ">";
          });

  nb::class_<PipelineRef>(m, "Pipeline")
      .def_prop_ro("name", [](const PipelineRef& p) { return p.p->name(); })
      .def_prop_ro("max_total_threads_per_threadgroup", [](const PipelineRef& p) { return p.p->max_total_threads_per_threadgroup(); })
      .def_prop_ro("thread_execution_width", [](const PipelineRef& p) { return p.p->thread_execution_width(); })
      .def_prop_ro("static_threadgroup_memory", [](const PipelineRef& p) { return p.p->static_threadgroup_memory(); })
      .def_prop_ro("params", [](const PipelineRef& p) {
        nb::list out;
        for (auto& q : p.p->params()) {
          nb::dict d;
          d["name"] = q.name;
          d["type"] = q.type;
          d["attribute"] = q.attribute;
          d["kind"] = kind_name(q.kind);
          d["space"] = space_name(q.space);
          d["index"] = q.index;
          d["is_pointer"] = q.is_pointer;
          d["type_size"] = q.type_size;
          d["line"] = q.line;
          out.append(d);
        }
        return out;
      })
      .def("__repr__", [](const PipelineRef& p) { return "<triton_mps.Pipeline '" + p.p->name() + "'>"; });

  nb::class_<TimingRef>(m, "Timing")
      .def_prop_ro("ready", [](const TimingRef& t) { return t.t->ready; })
      .def_prop_ro("start_ns", [](const TimingRef& t) { return t.t->start_ns; })
      .def_prop_ro("end_ns", [](const TimingRef& t) { return t.t->end_ns; })
      .def_prop_ro("elapsed_ns", [](const TimingRef& t) { return t.t->end_ns - t.t->start_ns; })
      .def_prop_ro("error", [](const TimingRef& t) { return t.t->error; })
      .def_prop_ro("counters", [](const TimingRef& t) {
        // The simulator's counters of this dispatch when counting was on (integers), else {}.
        nb::dict d;
        for (const auto& [name, value] : t.t->counters) {
          if (name == "memory_counted") d[name.c_str()] = value != 0.0;
          else d[name.c_str()] = static_cast<uint64_t>(value);
        }
        return d;
      });

}

// triton_mps.Device (a DeviceContext: allocator, pipelines, stream) and the device list.
void bind_device(nb::module_& m) {
  nb::class_<DeviceContext>(m, "Device")
      .def_prop_ro("info", [](const DeviceContext& c) { return info_dict(c.device->info()); })
      .def_prop_ro("name", [](const DeviceContext& c) { return c.device->info().name; })
      .def_prop_ro("is_simulator", [](const DeviceContext& c) { return c.device->info().is_simulator; })
      .def_prop_ro("is_emulated", [](const DeviceContext& c) { return c.device->info().is_emulated; })
      .def("buffer", [](DeviceContext& c, int64_t nbytes_) {
            const uint64_t nbytes = byte_count(nbytes_, "buffer(): nbytes");
            auto raw = c.pool->allocate(nbytes);
            return BufferRef{raw, 0, nbytes};
          }, "nbytes"_a, "A pooled shared-storage buffer (contents undefined).")
      .def("wrap_host", [](DeviceContext& c, uintptr_t address, int64_t nbytes_, nb::object owner) {
            const uint64_t nbytes = byte_count(nbytes_, "wrap_host(): nbytes");
            std::unique_ptr<RawBuffer> inner = c.device->wrap_host_memory(reinterpret_cast<void*>(address), nbytes);
            auto raw = std::make_shared<OwnedHostBuffer>(std::move(inner), std::move(owner), c.pool->track_wrapped(nbytes));
            return BufferRef{raw, 0, nbytes};
          }, "address"_a, "nbytes"_a, "owner"_a, "Wrap host memory without copying; `owner` is kept alive.")
      .def("wrap_native", [](DeviceContext& c, uintptr_t handle, int64_t offset_, int64_t nbytes_, nb::object owner) {
            const uint64_t offset = byte_count(offset_, "wrap_native(): offset");
            const uint64_t nbytes = byte_count(nbytes_, "wrap_native(): nbytes");
            std::unique_ptr<RawBuffer> inner = c.device->wrap_native_buffer(reinterpret_cast<void*>(handle));
            auto tracked = c.pool->track_wrapped(inner->length());
            std::shared_ptr<RawBuffer> raw = std::make_shared<OwnedHostBuffer>(std::move(inner), std::move(owner),
                                                                               std::move(tracked));
            if (offset > raw->length() || nbytes > raw->length() - offset)
              throw InvalidArgument("range [" + std::to_string(offset) + ", +" + std::to_string(nbytes) +
                                    ") is outside the native buffer of " + std::to_string(raw->length()) + " bytes");
            return BufferRef{raw, offset, nbytes};
          }, "handle"_a, "offset"_a, "nbytes"_a, "owner"_a = nb::none(),
          "Wrap a native buffer (an MTLBuffer handle); `owner` (e.g. the torch tensor) is kept alive with it.")
      .def("compile", [](DeviceContext& c, const std::string& source, const std::string& entry,
                         const std::string& math_mode, bool strict, std::vector<std::pair<std::string, std::string>> macros,
                         const std::string& label, const std::string& language_version, uint32_t max_threads,
                         std::optional<bool> memcheck, bool issue_warnings, bool background) {
            CompileOptions o;
            o.max_total_threads = max_threads;
            o.waited_for = !background;
            o.math_mode = parse_math_mode(math_mode);
            o.strict_check = strict;
            if (memcheck) o.memcheck = *memcheck;
            o.macros = std::move(macros);
            o.label = label;
            o.language_version = language_version;
            std::shared_ptr<Pipeline> p;
            {
              nb::gil_scoped_release release;
              try {
                p = c.cache->get(source, entry, o);
              } catch (...) {
                nb::gil_scoped_acquire acquire;
                if (issue_warnings) issue_core_warnings();
                throw;
              }
            }
            // Off for background builds (backend/prebuild.py): their warnings wait for the next
            // build on a caller's thread, where the user (and warnings filters) see them.
            if (issue_warnings) issue_core_warnings();
            return PipelineRef{p};
          }, "source"_a, "entry"_a, "math_mode"_a = "safe", "strict"_a = true,
          "macros"_a = std::vector<std::pair<std::string, std::string>>{}, "label"_a = "", "language_version"_a = "3.1",
          "max_threads"_a = 0, "memcheck"_a = nb::none(), "issue_warnings"_a = true, "background"_a = false)
      .def("launch", [](DeviceContext& c, const PipelineRef& p, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> threads,
                        nb::list args, std::vector<std::pair<uint32_t, uint32_t>> threadgroup_memory, int pack_scalars_at,
                        bool timed, nb::object before_own) -> nb::object {
            std::vector<const ParamInfo*> buffer_params;
            for (auto& q : p.p->params())
              if (q.kind == ParamInfo::Kind::Buffer) buffer_params.push_back(&q);
            std::sort(buffer_params.begin(), buffer_params.end(),
                      [](const ParamInfo* a, const ParamInfo* b) { return a->index < b->index; });
            std::vector<Arg> converted;
            converted.reserve(args.size());
            for (size_t i = 0; i < args.size(); ++i)
              converted.push_back(to_arg(args[i], i < buffer_params.size() ? buffer_params[i] : nullptr, p.p->name()));
            LaunchConfig cfg;
            cfg.threadgroups = grid;
            cfg.threads_per_group = threads;
            cfg.threadgroup_memory = std::move(threadgroup_memory);
            cfg.pack_scalars_at = pack_scalars_at;
            // `before_own` (given when a torch `mps` tensor is bound): such launches go to PyTorch's
            // stream, ordered with its ops; without one, `before_own` (torch.mps.synchronize)
            // runs first and the launch goes to our own queue.
            const bool uses_mps = !before_own.is_none();
            if (uses_mps) attach_torch_stream(c);
            const bool foreign = uses_mps && c.router->foreign() != nullptr;
            if (uses_mps && !foreign) before_own();
            std::shared_ptr<DispatchTiming> t;
            {
              nb::gil_scoped_release release;
              if (foreign) {
                t = c.router->launch_foreign(p.p, converted, cfg, timed, LaunchWait::Default);
              } else {
                // Rule 2 of the router (foreign_stream.h): after what was encoded on PyTorch's stream.
                if (c.router->foreign_pending() != 0) c.router->synchronize();
                t = c.stream->launch(p.p, converted, cfg, timed);
              }
            }
            if (!t) return nb::none();
            return nb::cast(TimingRef{t});
          }, "pipeline"_a, "grid"_a, "threads"_a, "args"_a,
          "threadgroup_memory"_a = std::vector<std::pair<uint32_t, uint32_t>>{}, "pack_scalars_at"_a = -1, "timed"_a = false,
          "before_own"_a = nb::none())
      .def("commit", [](DeviceContext& c) { nb::gil_scoped_release r; c.stream->commit(); })
      .def("synchronize", [](DeviceContext& c) {
            DrainReleasedOwners drain;  // after the GIL is back: what completion handlers released
            nb::gil_scoped_release r;
            c.router->synchronize();
          })
      // The stream lock may be held by a launch waiting for the GPU, whose completion handlers
      // may need the GIL: never wait for it with the GIL held.
      .def_prop_ro("pending", [](DeviceContext& c) { nb::gil_scoped_release r; return c.stream->pending(); })
      .def("set_commit_threshold", [](DeviceContext& c, size_t n) {
            nb::gil_scoped_release r;
            c.stream->set_commit_threshold(n);
          }, "n"_a)
      .def("pool_stats", [](DeviceContext& c) {
            PoolStats s = c.pool->stats();
            nb::dict d;
            d["active_bytes"] = s.active_bytes;
            d["peak_active_bytes"] = s.peak_active_bytes;
            d["cached_bytes"] = s.cached_bytes;
            d["num_allocations"] = s.num_allocations;
            d["hits"] = s.hits;
            d["misses"] = s.misses;
            d["num_cached_buffers"] = s.num_cached_buffers;
            d["num_returned"] = s.num_returned;
            d["wrapped_bytes"] = s.wrapped_bytes;
            d["num_wrapped"] = s.num_wrapped;
            d["num_wraps"] = s.num_wraps;
            d["num_unwraps"] = s.num_unwraps;
            d["peak_total_bytes"] = s.peak_total_bytes;
            return d;
          })
      .def("pool_config", [](DeviceContext& c) {
            nb::dict d;
            d["max_cached_bytes"] = c.pool->config().max_cached_bytes;
            d["max_buffer_age_ms"] = c.pool->config().max_buffer_age_ms;
            return d;
          })
      .def("set_pool_config", [](DeviceContext& c, int64_t max_cached_bytes, int64_t max_buffer_age_ms) {
            PoolConfig cfg;
            cfg.max_cached_bytes = byte_count(max_cached_bytes, "set_pool_config(): max_cached_bytes");
            if (max_buffer_age_ms < 0)
              throw InvalidArgument("set_pool_config(): max_buffer_age_ms must be >= 0, got " + std::to_string(max_buffer_age_ms));
            cfg.max_buffer_age_ms = static_cast<uint64_t>(max_buffer_age_ms);
            c.pool->set_config(cfg);
          }, "max_cached_bytes"_a, "max_buffer_age_ms"_a)
      .def("empty_cache", [](DeviceContext& c) { c.pool->empty_cache(); })
      .def("reset_peak", [](DeviceContext& c) { c.pool->reset_peak(); })
      .def("pipeline_cache_stats", [](DeviceContext& c) {
            auto s = c.cache->stats();
            nb::dict d;
            d["hits"] = s.hits;
            d["misses"] = s.misses;
            d["entries"] = s.entries;
            return d;
          })
      .def("clear_pipeline_cache", [](DeviceContext& c) { c.cache->clear(); })
      .def("__repr__", [](const DeviceContext& c) { return "<triton_mps.Device '" + c.device->info().name + "'>"; });

  m.def("devices", [] {
    nb::list out;
    for (auto& c : contexts()) out.append(nb::cast(c));
    return out;
  }, "Every device: Metal devices first (macOS), then the simulator.");
}

// The simulator: its shim, toolchain and per-dispatch counters.
void bind_simulator(nb::module_& m) {
  m.def("set_sim_shim_dir", &sim::set_shim_dir, "path"_a);
  m.def("sim_shim_dir", &sim::shim_dir);
  m.def("sim_toolchain", [] {
    const auto& t = sim::find_toolchain();
    nb::dict d;
    d["command"] = t.cxx;
    d["compile_command"] = t.cc;  // direct mode (empty: `command` compiles and links)
    d["link_command"] = t.ld;
    d["description"] = t.description;
    d["version"] = t.version;
    d["target"] = sim::sim_target().name;
    d["target_flags"] = sim::sim_target().flags;
    return d;
  });
  // Simulator traffic / FLOP counters (scheduler.h): per dispatch, off by default.
  m.def("sim_set_counters", &sim::set_counting, "on"_a);
  m.def("sim_counters_enabled", &sim::counting);
  // Kernels built by the simulator in this process, by SIMD-group collapse outcome (sim/simd_collapse.h).
  m.def("sim_collapse_counts", [] {
    nb::dict d;
    for (const auto& [outcome, n] : tmps::collapse_counts()) d[nb::str(outcome.c_str())] = n;
    return d;
  });
  m.def("sim_last_dispatch_counters", []() -> nb::object {
    const sim::DispatchCounters c = sim::last_dispatch_counters();
    if (!c.valid) return nb::none();
    nb::dict d;
    d["memory_counted"] = c.memory_counted;
    d["threadgroups"] = c.threadgroups;
    d["threads_per_threadgroup"] = c.threads_per_threadgroup;
    d["device_bytes_read"] = c.device_bytes_read;
    d["device_bytes_written"] = c.device_bytes_written;
    d["device_distinct_bytes_read"] = c.device_distinct_read;
    d["device_distinct_bytes_written"] = c.device_distinct_written;
    d["device_loads"] = c.device_loads;
    d["device_stores"] = c.device_stores;
    d["threadgroup_bytes_read"] = c.threadgroup_bytes_read;
    d["threadgroup_bytes_written"] = c.threadgroup_bytes_written;
    d["barriers"] = c.barriers;
    d["simd_collectives"] = c.simd_collectives;
    d["simdgroup_barriers"] = c.simdgroup_barriers;
    d["simdgroup_matrix_ops"] = c.simdgroup_matrix_ops;
    d["simdgroup_matrix_flops"] = c.simdgroup_matrix_flops;
    d["simdgroup_matrix_exchanges"] = c.simdgroup_matrix_exchanges;
    d["scalar_flops"] = c.scalar_flops;
    nb::list buffers;
    for (const auto& b : c.buffers) {
      nb::dict e;
      e["index"] = b.index;
      e["bytes"] = b.bytes;
      e["read"] = b.read;
      e["written"] = b.written;
      e["distinct_read"] = b.distinct_read;
      e["distinct_written"] = b.distinct_written;
      buffers.append(e);
    }
    d["buffers"] = buffers;
    return d;
  });
}
}  // namespace
}  // namespace tmps

NB_MODULE(_core, m) {
  using namespace tmps;
  m.doc() = "triton-mps native core: devices, buffer pool, pipeline cache, launcher, simulator";

  // Exceptions: one Python class per core error type, all under triton_mps.Error (exceptions.cpp).
  define_exception_classes(m);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error&) {
      set_python_error_from_current();
    }  // anything else: nanobind's own translation
  });

  bind_buffers_and_pipelines(m);
  bind_device(m);
  bind_simulator(m);
  m.def("cache_dir", &cache_dir);
  m.def("metal_limits", [] {  // mirrored by python/triton_mps/metal_limits.py
    nb::dict d;
    d["max_threads_per_threadgroup"] = limits::kMaxThreadsPerThreadgroup;
    d["max_threadgroup_memory"] = limits::kMaxThreadgroupMemory;
    d["threadgroup_memory_granule"] = limits::kThreadgroupMemoryGranule;
    d["max_buffer_bindings"] = limits::kMaxBufferBindings;
    d["simd_width"] = limits::kSimdWidth;
    d["max_set_bytes"] = limits::kMaxSetBytes;
    return d;
  }, "Metal's fixed limits (csrc/metal_limits.h).");
  m.def("pool_size_class", &pool_size_class, "nbytes"_a);
  bind_triton_launcher(m);
  bind_test_hooks(m);
}
