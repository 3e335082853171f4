// Per-device contexts for the Python bindings.
#include "py_context.h"

#include <cstring>

namespace tmps {

namespace {
std::string type_name_of(nb::handle v) { return nb::cast<std::string>(nb::str(v.type().attr("__name__"))); }
}  // namespace

ScalarValue python_scalar(nb::handle v, bool want_float, const std::string& where) {
  if (want_float) {
    double d = PyFloat_AsDouble(v.ptr());
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw InvalidArgument(where + " expects a number, got " + type_name_of(v));
    }
    return ScalarValue::from_double(d);
  }
  if (PyFloat_Check(v.ptr()))
    throw InvalidArgument(where + " expects an integer, got float " + nb::cast<std::string>(nb::repr(v)));
  nb::object idx = nb::steal(PyNumber_Index(v.ptr()));
  if (!idx.is_valid()) {
    PyErr_Clear();
    throw InvalidArgument(where + " expects an integer, got " + type_name_of(v));
  }
  int overflow = 0;
  long long ll = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  if (overflow == 0) return ScalarValue::from_signed(ll);
  if (overflow > 0) {
    unsigned long long ull = PyLong_AsUnsignedLongLong(idx.ptr());
    if (!PyErr_Occurred()) return ScalarValue::from_unsigned(ull);
    PyErr_Clear();
  }
  throw InvalidArgument(where + ": value " + nb::cast<std::string>(nb::repr(v)) + " does not fit");
}

namespace {
// Never destroyed: a Metal thread may release an owner while statics are torn down at exit.
std::mutex& g_released_mu = *new std::mutex;
std::vector<PyObject*>& g_released = *new std::vector<PyObject*>;  // references to drop on a Python thread

int drain_pending_call(void*) {
  drain_released_owners();
  return 0;
}
}  // namespace

void release_owner(nb::object owner) {
  if (!owner.is_valid()) return;
  if (!Py_IsInitialized()) {  // the interpreter is gone (exit): nothing to drop it with
    owner.release();
    return;
  }
  if (PyGILState_Check()) {
    owner.reset();
    return;
  }
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_released_mu);
    first = g_released.empty();
    g_released.push_back(owner.release().ptr());
  }
  // Callable without the GIL; the main thread runs it soon. Should it fail (queue full), the
  // next launch or synchronize drains.
  if (first) Py_AddPendingCall(&drain_pending_call, nullptr);
}

void drain_released_owners() {
  std::vector<PyObject*> drop;
  {
    std::lock_guard<std::mutex> lock(g_released_mu);
    drop.swap(g_released);
  }
  for (PyObject* p : drop) Py_DECREF(p);
}

std::vector<std::shared_ptr<DeviceContext>>& contexts() {
  static std::vector<std::shared_ptr<DeviceContext>> all;
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto& d : enumerate_devices()) all.push_back(std::make_shared<DeviceContext>(d));
  });
  return all;
}

void set_error_text(PyObject* type, const char* what) {
  PyObject* text = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "replace");
  if (!text) return;  // MemoryError is set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

}  // namespace tmps
