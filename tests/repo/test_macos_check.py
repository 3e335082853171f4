"""The macOS compile/link check (tools/macos_check.py) on this Linux machine.

Slow-ish: a cold run downloads the pinned metal-cpp wheel once (~45 MB, cached under
~/.cache/triton_mps/macos-check or $TRITON_MPS_CHECK_CACHE) and compiles the core for
aarch64-macos (~1 min on 2 cores); warm reruns take seconds (zig caches objects there too).

Besides the real tree, small TUs prove the check can fail: a wrong metal-cpp method must not
compile, a missing or duplicated *_PRIVATE_IMPLEMENTATION must not link, and a symbol an SDK does
not export must fail that SDK's link (the check links once per SDK in tools/macos_sdk_symbols/).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tools" / "macos_check.py"
IMPL = ROOT / "csrc" / "metal" / "metal_impl.cpp"
SDK_LISTS = ROOT / "tools" / "macos_sdk_symbols"
SDKS = ("14.5", "15.5", "26.0")
# Libraries with no real symbol list in an SDK (linked against tools/macos_stubs/tbd/ instead), in
# the check's FRAMEWORKS order; tools/macos_sdk_symbols/README.md says why each is missing.
STUBBED = {"14.5": "Foundation, libobjc", "15.5": "Foundation, QuartzCore, libobjc", "26.0": "Foundation"}

pytestmark = pytest.mark.timeout(600)

# Uses metal-cpp the way the backend does; links only together with metal_impl.cpp.
USER_TU = """
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

extern "C" unsigned long tmps_check_probe() {
  NS::SharedPtr<NS::AutoreleasePool> pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  NS::SharedPtr<MTL::Device> device = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
  NS::SharedPtr<MTL::Buffer> buffer = NS::TransferPtr(device->newBuffer(64, MTL::ResourceStorageModeShared));
  return buffer->length();
}
"""


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=600)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through the module
    spec.loader.exec_module(module)
    return module


def test_tree_compiles_and_links_for_every_sdk():
    r = run_check()
    assert r.returncode == 0, r.stdout + r.stderr
    for sdk in SDKS:
        assert f"macOS {sdk} SDK: OK: _core.dylib linked" in r.stdout, r.stdout
        assert (f"macOS {sdk} SDK: no real symbol list for {STUBBED[sdk]}: linked against the "
                "hand-written stubs") in r.stdout, r.stdout
    assert "TUs compiled" in r.stdout


def test_newest_sdk_macros_for_every_sdk_fail_older_sdks(tmp_path):
    # The check before per-SDK availability: metal_impl.cpp compiled once with zig's (macOS 26+)
    # availability macros makes metal-cpp weak-import MTLTensorDomain (macOS 26 SDK only) and
    # MTLLogStateErrorDomain (15+); a weak import still has to resolve at the static link.
    r = run_check("--sources", str(IMPL), write(tmp_path, "user.cpp", USER_TU), "--no-sdk-availability")
    assert r.returncode != 0, r.stdout + r.stderr
    assert "macOS 14.5 SDK: FAILED: 2 undefined symbol(s): _MTLLogStateErrorDomain _MTLTensorDomain" in r.stderr
    assert "macOS 15.5 SDK: FAILED: 1 undefined symbol(s): _MTLTensorDomain" in r.stderr
    assert "macOS 26.0 SDK: OK" in r.stdout
    assert "link error for the macOS 14.5, 15.5 SDK(s)" in r.stderr


def test_symbol_missing_from_an_sdk_fails_that_sdk_only(tmp_path):
    # A plain (not weak) reference to a constant only the macOS 26 SDK exports.
    tu = write(tmp_path, "tensor.cpp", """
extern "C" const void* const MTLTensorDomain;
extern "C" const void* tmps_check_tensor_domain() { return MTLTensorDomain; }
""")
    r = run_check("--sources", tu, "--sdk", "14.5", "--sdk", "26.0")
    assert r.returncode != 0, r.stdout + r.stderr
    assert "macOS 14.5 SDK: FAILED: 1 undefined symbol(s): _MTLTensorDomain" in r.stderr
    assert "macOS 26.0 SDK: OK" in r.stdout
    assert "15.5" not in r.stdout + r.stderr


def test_sdk_symbol_lists():
    for sdk in SDKS:
        names = set((SDK_LISTS / sdk / "Metal.txt").read_text().splitlines())
        assert "# install-name: /System/Library/Frameworks/Metal.framework/Versions/A/Metal" in names
        assert {"_MTLCreateSystemDefaultDevice", "_MTLCopyAllDevices", "_MTLIOErrorDomain"} <= names
        assert ("_MTLLogStateErrorDomain" in names) == (sdk != "14.5")
        assert ("_MTLTensorDomain" in names) == (sdk == "26.0")
        assert (SDK_LISTS / sdk / "availability.txt").exists()
        stubbed = set(STUBBED[sdk].split(", "))
        for library in ("Metal", "Foundation", "CoreFoundation", "QuartzCore", "libobjc"):
            assert (SDK_LISTS / sdk / f"{library}.txt").exists() == (library not in stubbed), (sdk, library)
        cf = set((SDK_LISTS / sdk / "CoreFoundation.txt").read_text().splitlines())
        assert "# install-name: /System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation" in cf
        assert {"_CFRelease", "_CFRetain", "_CFStringCreateWithCString", "_kCFAllocatorDefault",
                "_kCFRunLoopDefaultMode"} <= cf
        assert ("_CFAllocatorCreateWithZone" in cf) == (sdk == "26.0")
        assert ("_CFAllocatorAllocateTyped" in cf) == (sdk != "14.5")
        if "QuartzCore" not in stubbed:
            ca = set((SDK_LISTS / sdk / "QuartzCore.txt").read_text().splitlines())
            assert "# install-name: /System/Library/Frameworks/QuartzCore.framework/Versions/A/QuartzCore" in ca
            assert {"_CACurrentMediaTime", "_CATransform3DIdentity", "_kCAGravityResize"} <= ca


def test_availability_prelude_leaves_each_sdk_its_own_macros(tmp_path):
    check = load_module("tmps_macos_check", CHECK)
    header = check.zig_availability_versions(check.zig_command())
    sdks = {sdk.version: sdk for sdk in check.available_sdks()}
    assert set(SDKS) <= set(sdks)
    removed = {}
    for version in SDKS:
        text = check.availability_prelude(sdks[version], header, tmp_path).read_text()
        removed[version] = {line.split()[1] for line in text.splitlines() if line.startswith("#undef")}
    assert {"__MAC_15_0", "__MAC_26_0", "__IPHONE_18_0", "__IPHONE_26_0", "__TVOS_26_0",
            "MAC_OS_VERSION_15_0"} <= removed["14.5"]
    assert not {"__MAC_14_5", "__IPHONE_17_5", "MAC_OS_VERSION_14_5"} & removed["14.5"]
    assert {"__MAC_15_6", "__MAC_26_0", "__IPHONE_26_0", "__TVOS_26_0"} <= removed["15.5"]
    assert not {"__MAC_15_5", "__IPHONE_18_5"} & removed["15.5"]
    assert not {"__MAC_26_0", "__IPHONE_26_0", "__TVOS_26_0"} & removed["26.0"]
    assert "#define __MAC_OS_X_VERSION_MAX_ALLOWED 140500" in (
        check.availability_prelude(sdks["14.5"], header, tmp_path).read_text())


def test_extract_keeps_the_arm64_macos_names_of_a_tbd(tmp_path):
    extract = load_module("tmps_extract", SDK_LISTS / "extract.py")
    tbd = """--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos,
                   arm64e-macos ]
install-name:    '/usr/lib/libexample.dylib'
exports:
  - targets:         [ x86_64-macos ]
    symbols:         [ _only_x86 ]
  - targets:         [ x86_64-macos, arm64-macos,
                       arm64e-macos ]
    symbols:         [ _a, '$ld$hide$os10.5$_b',
                       _c ]
    objc-classes:    [ Thing ]
    weak-symbols:    [ _w ]
  - targets:         [ arm64-macos ]
    thread-local-symbols: [ _tls ]
...
"""
    exports = extract.tbd_exports(tbd)
    assert exports.install_name == "/usr/lib/libexample.dylib"
    assert exports.names == {"_a", "$ld$hide$os10.5$_b", "_c", "_w", "_tls"}
    assert {"_OBJC_CLASS_$_Thing", "_OBJC_METACLASS_$_Thing"} <= extract.tbd_exports(tbd, objc=True).names
    (tmp_path / "libexample.tbd").write_text(tbd)
    out = tmp_path / "list.txt"
    assert extract.main([str(tmp_path / "libexample.tbd"), "--sdk", "1.0", "--source", "test",
                         "-o", str(out)]) == 0
    text = out.read_text()
    assert "# install-name: /usr/lib/libexample.dylib" in text
    assert [line for line in text.splitlines() if not line.startswith("#")] == sorted(exports.names)


def test_metal_tu_with_impl_links(tmp_path):
    # Control for the negative tests below (which link for one SDK where the SDK does not matter):
    # the same TU links, for every SDK, when the implementation is present.
    r = run_check("--sources", str(IMPL), write(tmp_path, "user.cpp", USER_TU))
    assert r.returncode == 0, r.stdout + r.stderr


def test_wrong_metal_cpp_method_fails_to_compile(tmp_path):
    bad = USER_TU.replace("device->newBuffer(64,", "device->newBufferWithLength(64,")
    r = run_check("--sources", str(IMPL), write(tmp_path, "bad.cpp", bad), "--sdk", "26.0")
    assert r.returncode != 0
    assert "newBufferWithLength" in r.stderr
    assert "compile error" in r.stderr


def test_missing_private_implementation_fails_to_link(tmp_path):
    r = run_check("--sources", write(tmp_path, "user.cpp", USER_TU), "--sdk", "26.0")
    assert r.returncode != 0
    assert "undefined symbol" in r.stderr
    assert "link error" in r.stderr


def test_duplicate_private_implementation_fails_to_link(tmp_path):
    second = write(tmp_path, "second_impl.cpp", IMPL.read_text())
    r = run_check("--sources", str(IMPL), second, "--sdk", "26.0")
    assert r.returncode != 0
    assert "duplicate symbol" in r.stderr
    assert "link error" in r.stderr
