// The one place where the core's exception types (errors.h) become Python exception classes:
// defining the classes, and translating a C++ exception into the Python error indicator. Both
// nanobind's translator (bindings.cpp) and the hand-written launcher's call slot
// (triton_launch.cpp) go through set_python_error_from_current().
//
// A new error class: add the C++ type to csrc/errors.h, one row to kClasses and one catch
// clause in exceptions.cpp; nothing else.
#pragma once

#include <nanobind/nanobind.h>

namespace tmps {

// Creates triton_mps.Error and its subclasses as attributes of `m` (once per process).
void define_exception_classes(nanobind::module_& m);

// Sets the Python error indicator from the exception being handled (call inside a catch
// block): a core error becomes its triton_mps class (with `limit` on LimitExceeded, `errno`
// on HostError), Interrupted becomes KeyboardInterrupt after Python's SIGINT handler ran,
// nanobind's own exceptions and a pending Python error pass through.
void set_python_error_from_current();

}  // namespace tmps
