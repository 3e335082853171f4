"""Legal MSL identifiers from names in Triton source: the one place that decides them.

Triton source names reach the MSL text in two ways: the kernel's name (a global function, found
by the launcher through the metadata name) and variable-name hints of SSA values (locals, always
with a numeric suffix, see Emitter.fresh). Either may be an MSL or C++ keyword (`kernel`,
`device`, `constant`, `thread`, `half`, ...), a Metal standard-library name (`min`, `as_type`,
`float4`, `atan2`, ...), a macro (`M_PI_F`, `FLT_MAX`, ...), a name C++ reserves (`__x`, `_X`),
or one of our own generated names (`tmps_*`: helpers, kernel state, the simulator's entry points).
"""

from __future__ import annotations

import functools
import re

# C++ keywords and alternative tokens, plus MSL's own keywords and attribute-like qualifiers.
_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq main
kernel vertex fragment visible stitchable intersection mesh object device constant thread threadgroup
threadgroup_imageblock ray_data object_data metal
""".split())

# Metal standard-library types and functions (namespace metal, pulled in by `using namespace
# metal;`), and the C library names the shim or Metal declare globally.
_STDLIB = frozenset("""
half bfloat uchar ushort uint ulong size_t ptrdiff_t int8_t uint8_t int16_t uint16_t int32_t uint32_t int64_t
uint64_t intptr_t uintptr_t vec matrix packed_vec array array_ref sampler texture1d texture1d_array texture2d
texture2d_array texture3d texturecube texturecube_array texture2d_ms texture2d_ms_array depth2d depth2d_array
depthcube depthcube_array depth2d_ms texture_buffer access atomic atomic_int atomic_uint atomic_bool atomic_ulong
atomic_float memory_order memory_order_relaxed memory_order_acquire memory_order_release memory_order_acq_rel
memory_order_seq_cst mem_flags mem_none mem_device mem_threadgroup mem_texture thread_scope
simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 simd_vote visible_function_table
abs absdiff acos acosh add_sat all any as_type asin asinh atan atan2 atanh atomic_compare_exchange_weak_explicit
atomic_exchange_explicit atomic_fetch_add_explicit atomic_fetch_and_explicit atomic_fetch_max_explicit
atomic_fetch_min_explicit atomic_fetch_or_explicit atomic_fetch_sub_explicit atomic_fetch_xor_explicit
atomic_load_explicit atomic_store_explicit bitcast clamp clz copysign cos cosh cospi cross ctz degrees
determinant distance divide dot exp exp10 exp2 extract_bits fabs fast fdim floor ceil fma fmax fmax3 fmedian3
fmin fmin3 fmod fract frexp hadd ilogb insert_bits isfinite isinf isnan isnormal isordered isunordered ldexp
length length_squared log log10 log2 mad madhi madsat max max3 median3 min min3 mix modf mul24 mulhi nan
nextafter normalize pack popcount pow powr precise radians reflect refract reverse_bits rhadd rint rotate
round rsqrt saturate select sign signbit simd_all simd_and simd_any simd_ballot simd_broadcast
simd_broadcast_first simd_is_first simd_max simd_min simd_or simd_prefix_exclusive_product
simd_prefix_exclusive_sum simd_prefix_inclusive_product simd_prefix_inclusive_sum simd_product simd_shuffle
simd_shuffle_and_fill_down simd_shuffle_and_fill_up simd_shuffle_down simd_shuffle_rotate_down
simd_shuffle_rotate_up simd_shuffle_up simd_shuffle_xor simd_sum simd_xor simdgroup_barrier
simdgroup_load simdgroup_store simdgroup_multiply simdgroup_multiply_accumulate sin sincos sinh sinpi smoothstep
sqrt step sub_sat tan tanh tanpi threadgroup_barrier transpose trunc unpack erf erfc numeric_limits
printf assert abort exit malloc free memcpy memset
""".split())

_VECTOR = re.compile(r"(packed_)?(bool|char|uchar|short|ushort|int|uint|long|ulong|half|bfloat|float|double)"
                     r"[1-4](x[1-4])?")
_RESERVED_PATTERNS = (
    _VECTOR,
    re.compile(r"[A-Z_][A-Z0-9_]*"),  # macro-like: M_PI_F, FLT_MAX, INFINITY, __METAL_VERSION__, N
    re.compile(r"_.*"),               # C++ reserves _X and __x; keep clear of the shim's internals
    re.compile(r"tmps_.*"),           # ours: helpers, kernel state, simulator entry points
    re.compile(r"u?int\d+_t|simdgroup_\w+|simd_\w+|quad_\w+|atomic_\w+|texture\w*|depth\w*"),
)


@functools.lru_cache(maxsize=8192)
def is_reserved(name: str) -> bool:
    """True when `name` cannot be used as a global or local MSL identifier of ours."""
    return name in _KEYWORDS or name in _STDLIB or any(p.fullmatch(name) for p in _RESERVED_PATTERNS)


def sanitize(name: str) -> str:
    """Only [A-Za-z0-9_], not starting with a digit (other characters become `_xHH`)."""
    out = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else f"_x{ord(ch):x}" for ch in name)
    if not out or out[0].isdigit():
        out = "k" + out
    return out


def legal_kernel_name(name: str) -> str:
    """The MSL name of a kernel whose Triton name is `name`: `name` itself when it is legal,
    else `k_<name>` (no reserved name starts with `k_`): `kernel` -> `k_kernel`."""
    out = sanitize(name)
    return "k_" + out if is_reserved(out) else out


@functools.lru_cache(maxsize=4096)
def local_prefix(hint: str) -> str:
    """A prefix for numbered locals (`<prefix><n>`, registers `<prefix><n>_<r>`): ends with a
    letter, so different prefixes never produce the same name, and is not one of our names."""
    p = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
    if p[0].isdigit() or p[0] == "_" or p.startswith("tmps_") or p.startswith("arg") or p == "p":
        p = "v_" + p.lstrip("_")  # arg<i> are kernel parameters, p<i> callee parameters
    if not p[-1].isalpha():
        p += "v"
    if is_reserved(p + "_0"):  # a family reserved whatever follows: M_PI, simd_x, quad_y, ...
        p = "v_" + p
    return p


def local_name(prefix: str, n: int) -> str:
    """The n-th local with this prefix; `prefix_<n>` when `<prefix><n>` is reserved (float4,
    atan2, ...): a prefix ends with a letter, so that form never collides with another."""
    name = f"{prefix}{n}"
    return f"{prefix}_{n}" if is_reserved(name) else name
