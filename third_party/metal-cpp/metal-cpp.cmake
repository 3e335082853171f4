# metal-cpp headers as the INTERFACE target `metal_cpp` (CMakeLists.txt includes this on Apple).
#
# Where the headers come from, first match wins:
#   1. METAL_CPP_DIR (CMake cache variable or environment variable): a directory that holds
#      Foundation/, Metal/ and QuartzCore/ (Apple's metal-cpp release, unpacked).
#   2. The pinned PyPI wheel in pin.txt (mlx-metal carries metal-cpp under mlx/include/metal_cpp/),
#      fetched with pip, checked against the pinned SHA-256 and unpacked into the build tree.
# Nothing of Apple's is ever copied into the source tree (see README.md and .gitignore).
include_guard(GLOBAL)

set(METAL_CPP_DIR "$ENV{METAL_CPP_DIR}" CACHE PATH
    "metal-cpp directory holding Metal/Metal.hpp; empty: fetch the wheel pinned in third_party/metal-cpp/pin.txt")

function(_tmps_fetch_metal_cpp out_dir)
  file(STRINGS "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pin.txt" pin_lines REGEX "^[a-z0-9_]+=")
  foreach(line IN LISTS pin_lines)
    string(REGEX MATCH "^([a-z0-9_]+)=(.*)$" unused "${line}")
    set(pin_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endforeach()
  foreach(key package version wheel sha256)
    if(NOT pin_${key})
      message(FATAL_ERROR "metal-cpp: '${key}' missing from third_party/metal-cpp/pin.txt")
    endif()
  endforeach()

  set(root "${CMAKE_BINARY_DIR}/_deps/metal-cpp-${pin_package}-${pin_version}")
  set(include_dir "${root}/include")
  if(EXISTS "${include_dir}/Metal/Metal.hpp")
    set(${out_dir} "${include_dir}" PARENT_SCOPE)
    return()
  endif()

  # The wheel's platform tag (e.g. macosx_14_0_arm64) is the last dash field of its file name.
  string(REGEX MATCH "-([^-]+)\\.whl$" unused "${pin_wheel}")
  set(platform "${CMAKE_MATCH_1}")
  set(wheel "${root}/${pin_wheel}")
  if(EXISTS "${wheel}")
    file(SHA256 "${wheel}" have)
    if(NOT have STREQUAL pin_sha256)
      file(REMOVE "${wheel}")
    endif()
  endif()
  if(NOT EXISTS "${wheel}")
    if(Python_EXECUTABLE)
      set(python "${Python_EXECUTABLE}")
    else()
      find_package(Python3 COMPONENTS Interpreter REQUIRED)
      set(python "${Python3_EXECUTABLE}")
    endif()
    message(STATUS "metal-cpp: downloading ${pin_package}==${pin_version} (${pin_wheel})")
    execute_process(
      COMMAND "${python}" -m pip download --no-deps --only-binary=:all: --platform "${platform}"
              --dest "${root}" "${pin_package}==${pin_version}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT EXISTS "${wheel}")
      message(FATAL_ERROR "metal-cpp: could not download ${pin_wheel} with pip (${rc}):\n${out}${err}\n"
                          "Set METAL_CPP_DIR to an unpacked metal-cpp release instead.")
    endif()
  endif()
  file(SHA256 "${wheel}" have)
  if(NOT have STREQUAL pin_sha256)
    file(REMOVE "${wheel}")
    message(FATAL_ERROR "metal-cpp: ${pin_wheel} has SHA-256 ${have}, pin.txt expects ${pin_sha256}")
  endif()

  # Unpack only the headers, then move them into place in one step.
  set(unpack "${root}/unpack")
  file(REMOVE_RECURSE "${unpack}")
  file(ARCHIVE_EXTRACT INPUT "${wheel}" DESTINATION "${unpack}" PATTERNS "mlx/include/metal_cpp/*")
  if(NOT EXISTS "${unpack}/mlx/include/metal_cpp/Metal/Metal.hpp")
    message(FATAL_ERROR "metal-cpp: ${pin_wheel} holds no mlx/include/metal_cpp/Metal/Metal.hpp")
  endif()
  file(REMOVE_RECURSE "${include_dir}")
  file(RENAME "${unpack}/mlx/include/metal_cpp" "${include_dir}")
  file(REMOVE_RECURSE "${unpack}")
  set(${out_dir} "${include_dir}" PARENT_SCOPE)
endfunction()

# The macOS SDK this build compiles and links against (xcrun, as MLX reads it; CMAKE_OSX_SYSROOT when
# set). The pinned metal-cpp (macOS 26) declares its constants (MTLTensorDomain, ...) as weak imports
# only when the SDK's AvailabilityVersions.h defines __MAC_26_0, i.e. with the macOS 26 SDK, whose
# Metal.tbd exports them all; with an older SDK it looks them up with dlsym when the module loads and
# the link needs none of them. tools/macos_check.py compiles and links the same way once per SDK in
# tools/macos_sdk_symbols/ (14.5, 15.5, 26.0); an SDK older than all of those is not checked.
function(_tmps_macos_sdk_version out)
  set(sdk macosx)
  if(CMAKE_OSX_SYSROOT)
    set(sdk "${CMAKE_OSX_SYSROOT}")
  endif()
  execute_process(COMMAND xcrun --sdk "${sdk}" --show-sdk-version
                  OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if((NOT rc EQUAL 0 OR NOT version MATCHES "^[0-9]+(\\.[0-9]+)*$")
     AND EXISTS "${CMAKE_OSX_SYSROOT}/SDKSettings.json")
    # An SDK path xcrun does not take: its SDKSettings.json names the version.
    file(READ "${CMAKE_OSX_SYSROOT}/SDKSettings.json" settings)
    string(REGEX MATCH "\"Version\" *: *\"([0-9.]+)\"" unused "${settings}")
    set(version "${CMAKE_MATCH_1}")
  endif()
  if(NOT version MATCHES "^[0-9]+(\\.[0-9]+)*$")
    set(version "")
  endif()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

function(_tmps_report_macos_sdk)
  _tmps_macos_sdk_version(sdk)
  set(TMPS_MACOS_SDK_VERSION "${sdk}" CACHE INTERNAL "macOS SDK version the build uses")
  file(GLOB specs "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../tools/macos_sdk_symbols/*/availability.txt")
  set(checked "")
  foreach(spec IN LISTS specs)
    get_filename_component(dir "${spec}" DIRECTORY)
    get_filename_component(version "${dir}" NAME)
    list(APPEND checked "${version}")
  endforeach()
  list(SORT checked COMPARE NATURAL)
  string(REPLACE ";" ", " checked_text "${checked}")
  if(NOT sdk)
    message(WARNING "metal-cpp: could not read the macOS SDK version (xcrun --show-sdk-version); "
                    "the link is checked for the macOS ${checked_text} SDKs (tools/macos_check.py)")
    return()
  endif()
  if(METAL_CPP_DIR)
    set(how "METAL_CPP_DIR: run tools/macos_check.py --metal-cpp-dir to check it for the macOS ${checked_text} SDKs")
  elseif(sdk VERSION_GREATER_EQUAL 26.0)
    set(how "its constants are weak imports, all exported by this SDK")
  else()
    set(how "its constants are looked up with dlsym at load time (SDK older than 26)")
  endif()
  message(STATUS "metal-cpp: macOS SDK ${sdk}: ${how}")
  if(checked)
    list(GET checked 0 oldest)
    if(sdk VERSION_LESS oldest)
      message(WARNING "metal-cpp: the macOS ${sdk} SDK is older than every SDK the link is checked "
                      "against (${checked_text}); use Xcode 15.4 or later (or its Command Line Tools)")
    endif()
  endif()
endfunction()
_tmps_report_macos_sdk()

if(METAL_CPP_DIR)
  set(_tmps_metal_cpp_include "${METAL_CPP_DIR}")
else()
  _tmps_fetch_metal_cpp(_tmps_metal_cpp_include)
endif()
if(NOT EXISTS "${_tmps_metal_cpp_include}/Metal/Metal.hpp")
  message(FATAL_ERROR "metal-cpp: no Metal/Metal.hpp under ${_tmps_metal_cpp_include}")
endif()
message(STATUS "metal-cpp: ${_tmps_metal_cpp_include}")

if(NOT TARGET metal_cpp)
  add_library(metal_cpp INTERFACE)
  # SYSTEM: Apple's headers are not held to our warning flags.
  target_include_directories(metal_cpp SYSTEM INTERFACE "${_tmps_metal_cpp_include}")
endif()
