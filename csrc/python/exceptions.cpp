// See exceptions.h.
#include "exceptions.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "errors.h"
#include "py_context.h"

namespace tmps {

namespace {

PyObject* g_error = nullptr;  // triton_mps.Error; the classes below derive from it (kept for the process)

struct ClassRow {
  const char* name;
  PyObject** extra_base;  // a builtin base besides triton_mps.Error (nullptr: none)
  PyObject* cls;
};

// name, extra builtin base. Order: the order of the catch clauses does not depend on it.
ClassRow kClasses[] = {
    {"InvalidArgument", &PyExc_ValueError, nullptr},
    {"CompileError", nullptr, nullptr},
    {"LimitExceeded", &PyExc_ValueError, nullptr},
    {"DispatchError", nullptr, nullptr},
    {"OutOfMemory", &PyExc_MemoryError, nullptr},
    {"Unavailable", nullptr, nullptr},
    // The machine failed, not the kernel: a cache write the OS refused, a compiler killed.
    {"HostError", &PyExc_OSError, nullptr},
};

PyObject* cls(const char* name) {
  for (const ClassRow& row : kClasses)
    if (std::strcmp(row.name, name) == 0) return row.cls;
  return PyExc_RuntimeError;  // unreachable once defined
}

// Sets `name` = value (a new reference, consumed) on the pending exception.
void set_attribute(const char* name, PyObject* value) {
  PyObject *type = nullptr, *exc = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &exc, &trace);
  PyErr_NormalizeException(&type, &exc, &trace);
  if (exc && value) PyObject_SetAttrString(exc, name, value);
  Py_XDECREF(value);
  PyErr_Restore(type, exc, trace);
}

}  // namespace

void define_exception_classes(nanobind::module_& m) {
  if (!g_error) {
    g_error = PyErr_NewException("triton_mps.Error", PyExc_RuntimeError, nullptr);
    for (ClassRow& row : kClasses) {
      PyObject* bases = row.extra_base ? PyTuple_Pack(2, g_error, *row.extra_base) : PyTuple_Pack(1, g_error);
      row.cls = PyErr_NewException((std::string("triton_mps.") + row.name).c_str(), bases, nullptr);
      Py_DECREF(bases);
    }
  }
  m.attr("Error") = nanobind::handle(g_error);
  for (const ClassRow& row : kClasses) m.attr(row.name) = nanobind::handle(row.cls);
}

// Messages may carry a tool's raw bytes: set_error_text decodes them safely (py_context.h).
void set_python_error_from_current() {
  try {
    throw;
  } catch (nanobind::python_error& e) {
    e.restore();
  } catch (const nanobind::builtin_exception& e) {
    // nanobind's own (next_overload, type_error, ...): let it raise its class.
    set_error_text(PyExc_RuntimeError, e.what());
  } catch (const InvalidArgument& e) {
    set_error_text(cls("InvalidArgument"), e.what());
  } catch (const CompileError& e) {
    set_error_text(cls("CompileError"), e.what());
  } catch (const LimitExceeded& e) {
    set_error_text(cls("LimitExceeded"), e.what());
    set_attribute("limit", PyLong_FromUnsignedLongLong(e.limit));
  } catch (const DispatchError& e) {
    set_error_text(cls("DispatchError"), e.what());
  } catch (const Interrupted& e) {
    // Ctrl-C stopped a dispatch or a build: run Python's SIGINT handler now (KeyboardInterrupt).
    if (PyErr_CheckSignals() == 0) set_error_text(PyExc_KeyboardInterrupt, e.what());
  } catch (const OutOfMemory& e) {
    set_error_text(cls("OutOfMemory"), e.what());
  } catch (const Unavailable& e) {
    set_error_text(cls("Unavailable"), e.what());
  } catch (const HostError& e) {
    set_error_text(cls("HostError"), e.what());
    if (e.os_error != 0) {
      set_attribute("errno", PyLong_FromLong(e.os_error));
      set_attribute("strerror", PyUnicode_DecodeLocale(std::strerror(e.os_error), "surrogateescape"));
    }
  } catch (const Error& e) {
    set_error_text(g_error ? g_error : PyExc_RuntimeError, e.what());
  } catch (const std::exception& e) {
    set_error_text(PyExc_RuntimeError, e.what());
  }
}

}  // namespace tmps
