"""pytest plugin for PyTorch's Inductor tests (`CpuTritonTests`, Inductor's `cpu_backend="triton"`)
on the mps backend, loaded beside tmps_conformance_plugin (ids, skip list, report) by
tools/conformance/run_inductor.py.

- Counts the Triton launches each test made through our launcher (`triton_mps.profile()`): the
  record's `launches`. A pass with none ran no kernel of ours (Inductor fell back to aten).
- Runs the tests PyTorch marks `_expected_failure_triton_cpu` as plain tests (record field
  `triton_cpu_xfail`): a pass there is a case triton-cpu fails and we pass; a failure is ours.
- `--tmps-lift-triton-cpu-skips`: also runs the tests PyTorch skips only for triton-cpu
  (`@skip_if_triton_cpu` and the tests' own `if is_triton_cpu_backend(...): raise SkipTest`);
  `TRITON_CPU_SLOW_TESTS` (skipped as slow on triton-cpu) stay skipped. The record field
  `triton_cpu_skip` marks the tests whose code holds such a skip (for `test_pointwise`, every
  instance, also those whose op the skip does not name).
"""

from __future__ import annotations

import sys

import pytest

# Tests whose own body skips with `if is_triton_cpu_backend(self.device): raise SkipTest` and
# uses the function for nothing else (test_torchinductor.py; its one other caller, test_neg_index,
# picks which generated code to inspect and needs the true answer, so it is not listed).
_INLINE_SKIPS = frozenset({"test_dtypeview", "test_pointwise"})

TEMPLATE_MODULE = "test_torchinductor"
TEST_CLASS = "CpuTritonTests"
XFAIL_PROP = "_expected_failure_triton_cpu"


def pytest_addoption(parser):
    group = parser.getgroup("triton-mps conformance")
    group.addoption("--tmps-lift-triton-cpu-skips", action="store_true", default=False,
                    help="run the tests PyTorch skips only for triton-cpu")


def _test_class():
    module = sys.modules.get("test_triton_cpu_backend") or sys.modules.get("test.inductor.test_triton_cpu_backend")
    return getattr(module, TEST_CLASS, None) if module is not None else None


def _skip_wrapper_code(template):
    """The code object of the wrapper `skip_if_triton_cpu` puts around a test: one nested code
    object, shared by every wrapper it makes."""
    return template.skip_if_triton_cpu(lambda self: None).__code__


def _lift_skips(template) -> None:
    """Make `is_triton_cpu_backend` answer False where its only use is a skip: inside
    `skip_if_triton_cpu`'s wrapper and in the bodies named in _INLINE_SKIPS. Elsewhere it keeps
    its answer (the code under test is still Inductor's Triton CPU path)."""
    original = template.is_triton_cpu_backend
    wrapper_code = _skip_wrapper_code(template)

    def is_triton_cpu_backend(device) -> bool:
        caller = sys._getframe(1).f_code
        if caller is wrapper_code or caller.co_name in _INLINE_SKIPS:
            return False
        return original(device)

    template.is_triton_cpu_backend = is_triton_cpu_backend


def _uses_triton_cpu_skip(template, fn) -> bool:
    """`fn` (a test of the class) or a function it calls skips for triton-cpu alone. The callees
    are followed through `__wrapped__` and through default arguments: copy_tests' copy of a test
    calls it through a default argument, and its `__wrapped__` (copied from the test's own
    `__dict__`) skips the outermost decorator."""
    wrapper_code = _skip_wrapper_code(template)
    todo, seen = [fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        if code is wrapper_code or (code is not None and code.co_name in _INLINE_SKIPS):
            return True
        todo.append(getattr(fn, "__wrapped__", None))
        todo.extend(d for d in (getattr(fn, "__defaults__", None) or ()) if callable(d))
    return False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    cls = _test_class()
    template = sys.modules.get(TEMPLATE_MODULE)
    if cls is None or template is None:
        return
    lift = config.getoption("--tmps-lift-triton-cpu-skips")
    if lift:
        _lift_skips(template)
    for item in items:
        fn = cls.__dict__.get(item.name)
        if fn is None:
            continue
        if getattr(fn, XFAIL_PROP, False):
            item.user_properties.append(("tmps_rec_triton_cpu_xfail", True))
        if lift and _uses_triton_cpu_skip(template, fn):
            item.user_properties.append(("tmps_rec_triton_cpu_skip", True))


def _run_as_plain_test(method) -> None:
    """Clear unittest's expected-failure flag on `method` and every function it wraps: torch's
    TestCase wraps each test method per instance (copying the flag), and unittest reads the flag
    from the instance's attribute when the test runs."""
    while method is not None:
        target = getattr(method, "__func__", method)
        if getattr(target, "__unittest_expecting_failure__", False):
            target.__unittest_expecting_failure__ = False
        method = getattr(target, "__wrapped__", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    import triton_mps

    if ("tmps_rec_triton_cpu_xfail", True) in item.user_properties:
        _run_as_plain_test(getattr(item.instance, item.name, None))
    with triton_mps.profile() as prof:
        yield
    item.user_properties.append(("tmps_rec_launches", len(prof.records)))
