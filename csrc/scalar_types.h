// MSL scalar and vector types of kernel parameters, for packing launch arguments from host
// values with range checks (a value that does not fit is an error, never truncated silently).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace tmps {

struct ScalarValue {
  enum class Kind { Signed, Unsigned, Float } kind = Kind::Signed;
  long long i = 0;
  unsigned long long u = 0;
  double f = 0;
  static ScalarValue from_signed(long long v) { ScalarValue s; s.kind = Kind::Signed; s.i = v; return s; }
  static ScalarValue from_unsigned(unsigned long long v) { ScalarValue s; s.kind = Kind::Unsigned; s.u = v; return s; }
  static ScalarValue from_double(double v) { ScalarValue s; s.kind = Kind::Float; s.f = v; return s; }
};

// float -> bfloat16 bits, round to nearest even; NaN stays NaN.
inline uint16_t float_to_bfloat_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((b >> 16) | 0x40);
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

// float -> IEEE half bits, round to nearest even, with overflow to infinity and subnormals.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_man & 1))) ++half_man;
    return static_cast<uint16_t>(sign | half_man);
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(h);
}

struct ScalarType {
  enum class Base { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 } base = Base::I32;
  unsigned lanes = 1;
  size_t element_size = 4;
  bool packed = false;  // packed_float3: no padding

  bool is_float() const { return base == Base::F16 || base == Base::BF16 || base == Base::F32 || base == Base::F64; }
  // MSL: 3-component vectors are padded to 4.
  size_t size() const { return element_size * (lanes == 3 && !packed ? 4 : lanes); }

  // Write `v` as this type's element at `out`; returns an error text if it does not fit.
  std::string store(const ScalarValue& v, uint8_t* out) const {
    if (is_float()) {
      double d = v.kind == ScalarValue::Kind::Float ? v.f
                 : v.kind == ScalarValue::Kind::Signed ? static_cast<double>(v.i)
                                                       : static_cast<double>(v.u);
      if (base == Base::F64) {  // Triton fp64 scalars: the kernel reads the 8 bytes as ulong bits
        std::memcpy(out, &d, 8);
        return {};
      }
      float f = static_cast<float>(d);
      if (base == Base::F32) {
        std::memcpy(out, &f, 4);
      } else {
        uint16_t h = base == Base::F16 ? float_to_half_bits(f) : float_to_bfloat_bits(f);
        std::memcpy(out, &h, 2);
      }
      return {};
    }
    if (v.kind == ScalarValue::Kind::Float) return "expected an integer";
    long double lo = 0, hi = 0;
    switch (base) {
      case Base::Bool: lo = 0; hi = 1; break;
      case Base::I8: lo = INT8_MIN; hi = INT8_MAX; break;
      case Base::U8: lo = 0; hi = UINT8_MAX; break;
      case Base::I16: lo = INT16_MIN; hi = INT16_MAX; break;
      case Base::U16: lo = 0; hi = UINT16_MAX; break;
      case Base::I32: lo = INT32_MIN; hi = INT32_MAX; break;
      case Base::U32: lo = 0; hi = UINT32_MAX; break;
      case Base::I64: lo = static_cast<long double>(INT64_MIN); hi = static_cast<long double>(INT64_MAX); break;
      case Base::U64: lo = 0; hi = static_cast<long double>(UINT64_MAX); break;
      default: break;
    }
    long double x = v.kind == ScalarValue::Kind::Signed ? static_cast<long double>(v.i) : static_cast<long double>(v.u);
    if (x < lo || x > hi) return "value " + (v.kind == ScalarValue::Kind::Signed ? std::to_string(v.i) : std::to_string(v.u)) + " does not fit";
    uint64_t bits = v.kind == ScalarValue::Kind::Signed ? static_cast<uint64_t>(v.i) : v.u;
    std::memcpy(out, &bits, element_size);  // little-endian: low bytes first
    return {};
  }
};

// "float", "uint", "half4", "const int", "uint32_t", "packed_float2"... -> type; nullopt for structs.
inline std::optional<ScalarType> parse_scalar_type(std::string t) {
  auto strip_word = [&](const std::string& w) {
    size_t p;
    while ((p = t.find(w)) != std::string::npos) t.erase(p, w.size());
  };
  strip_word("const");
  strip_word("volatile");
  strip_word("metal::");
  std::string s;
  for (char c : t)
    if (c != ' ' && c != '\t') s += c;
  unsigned lanes = 1;
  if (!s.empty() && s.back() >= '2' && s.back() <= '4' && s.size() > 1 && !(s.size() > 2 && s[s.size() - 2] >= '0' && s[s.size() - 2] <= '9')) {
    lanes = static_cast<unsigned>(s.back() - '0');
    s.pop_back();
  }
  bool packed = s.rfind("packed_", 0) == 0;
  if (packed) s = s.substr(7);
  struct Entry { const char* name; ScalarType::Base base; size_t size; };
  static const Entry table[] = {
      {"bool", ScalarType::Base::Bool, 1},    {"char", ScalarType::Base::I8, 1},     {"int8_t", ScalarType::Base::I8, 1},
      {"uchar", ScalarType::Base::U8, 1},     {"uint8_t", ScalarType::Base::U8, 1},  {"short", ScalarType::Base::I16, 2},
      {"int16_t", ScalarType::Base::I16, 2},  {"ushort", ScalarType::Base::U16, 2},  {"uint16_t", ScalarType::Base::U16, 2},
      {"int", ScalarType::Base::I32, 4},      {"int32_t", ScalarType::Base::I32, 4}, {"uint", ScalarType::Base::U32, 4},
      {"unsigned", ScalarType::Base::U32, 4}, {"unsignedint", ScalarType::Base::U32, 4}, {"uint32_t", ScalarType::Base::U32, 4},
      {"long", ScalarType::Base::I64, 8},     {"int64_t", ScalarType::Base::I64, 8}, {"ulong", ScalarType::Base::U64, 8},
      {"uint64_t", ScalarType::Base::U64, 8}, {"size_t", ScalarType::Base::U64, 8},  {"half", ScalarType::Base::F16, 2},
      {"bfloat", ScalarType::Base::BF16, 2},  {"float", ScalarType::Base::F32, 4},
      // Not an MSL type (Metal has no fp64): the launcher's name for an fp64 argument that the
      // kernel declares as `ulong` (software float64, compiler/fp64.py).
      {"double", ScalarType::Base::F64, 8},
  };
  for (const auto& e : table) {
    if (s == e.name) {
      ScalarType st;
      st.base = e.base;
      st.lanes = lanes;
      st.element_size = e.size;
      st.packed = packed;
      if (lanes > 1 && (e.base == ScalarType::Base::I8 || e.base == ScalarType::Base::U8) && std::string(e.name).find('_') != std::string::npos)
        return std::nullopt;  // int8_t4 is not a type
      return st;
    }
  }
  return std::nullopt;
}

// Alignment MSL gives `T` in `device T*` (scalars and vectors; atomic_T like T); 0 when unknown
// (structs). Metal requires setBuffer offsets of such arguments to be a multiple of it.
inline size_t msl_type_alignment(std::string t) {
  for (const char* w : {"metal::", "atomic_"}) {
    const size_t p = t.find(w);
    if (p != std::string::npos) t.erase(p, std::strlen(w));
  }
  const std::optional<ScalarType> st = parse_scalar_type(t);
  if (!st || st->base == ScalarType::Base::F64) return 0;
  return st->packed ? st->element_size : st->size();
}

}  // namespace tmps
