# The emulated Metal runtime (Linux only, never on Apple): compiles csrc/metal/*.cpp with the
# real metal-cpp headers, plus csrc/metal_emu/, with clang from the PyPI `ziglang` wheel
# (metal-cpp needs clang: Objective-C blocks). clang targets the same GNU toolchain as the
# project's compiler (libstdc++), so the objects link into tmps_core like any other.
#
# Sets TMPS_METAL_EMU_OBJECTS (object files to add to tmps_core), or leaves it empty when zig
# is not available or TRITON_MPS_METAL_EMU=OFF.
include_guard(GLOBAL)

option(TRITON_MPS_METAL_EMU "Build the emulated Metal device (Linux)" ON)
set(TMPS_METAL_EMU_OBJECTS "")

if(TRITON_MPS_METAL_EMU AND NOT APPLE)
  find_package(Python 3.9 COMPONENTS Interpreter REQUIRED)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import importlib.util as u, os; s = u.find_spec('ziglang'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE _tmps_zig_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _tmps_zig_dir OR NOT EXISTS "${_tmps_zig_dir}/zig")
    message(STATUS "metal-emu: no ziglang in ${Python_EXECUTABLE}: building without the emulated Metal device")
  else()
    include(${CMAKE_CURRENT_LIST_DIR}/../../third_party/metal-cpp/metal-cpp.cmake)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
      set(_tmps_arch x86_64)
      set(_tmps_arch_flags "")
    else()
      set(_tmps_arch aarch64)
      set(_tmps_arch_flags "-D__arm64__=1")  # metal-cpp's name for the architecture
    endif()
    set(_src "${CMAKE_CURRENT_LIST_DIR}/..")
    set(_flags --target=${_tmps_arch}-linux-gnu -resource-dir "${_tmps_zig_dir}/lib" -std=c++17 -fblocks -fPIC -O2
        -Wall -Wextra -Wno-unused-parameter -D__MAC_26_0=260000 -DTMPS_METAL_EMULATED=1 ${_tmps_arch_flags}
        -I "${_src}" -isystem "${_src}/metal_emu/include" -isystem "${_tmps_metal_cpp_include}")
    set(_sources metal/metal_device.cpp metal/pipeline_archive.cpp metal/metal_impl.cpp metal/torch_stream.cpp
        metal/fork_check.cpp metal_emu/objc_runtime.cpp
        metal_emu/blocks_runtime.cpp metal_emu/foundation.cpp metal_emu/metal_objects.cpp
        metal_emu/metal_entry.cpp metal_emu/emu_hooks.cpp metal_emu/threading_checks.cpp
        metal_emu/msgsend_${_tmps_arch}.S)
    foreach(rel IN LISTS _sources)
      string(REPLACE "/" "_" stem "${rel}")
      set(obj "${CMAKE_CURRENT_BINARY_DIR}/metal_emu/${stem}.o")
      if(rel MATCHES "\\.S$")
        set(lang_flags "")
      else()
        set(lang_flags -x c++)
      endif()
      add_custom_command(
        OUTPUT "${obj}"
        COMMAND "${_tmps_zig_dir}/zig" clang ${lang_flags} ${_flags} -MD -MF "${obj}.d" -c "${_src}/${rel}" -o "${obj}"
        DEPENDS "${_src}/${rel}"
        DEPFILE "${obj}.d"
        COMMENT "metal-emu: ${rel} (zig clang)"
        VERBATIM)
      list(APPEND TMPS_METAL_EMU_OBJECTS "${obj}")
    endforeach()
    message(STATUS "metal-emu: emulated Metal device enabled (zig at ${_tmps_zig_dir})")
  endif()
endif()
