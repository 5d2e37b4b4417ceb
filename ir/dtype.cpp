#include "ir/dtype.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kfuse {

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtypeName(t) == name) return t;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::F64:
    case DType::I64: return 8;
    case DType::F32:
    case DType::I32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I8:
    case DType::U8:
    case DType::Bool: return 1;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool isInteger(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8;
}

namespace {
template <typename I>
double saturateInt(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  double lo = static_cast<double>(std::numeric_limits<I>::min());
  // INT64_MAX is not a double: (double)INT64_MAX is 2^63, and converting 2^63
  // back to int64 is undefined. Saturate to the largest double below it.
  double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (static_cast<long double>(hi) > static_cast<long double>(std::numeric_limits<I>::max())) hi = std::nextafter(hi, 0.0);
  return t < lo ? lo : (t > hi ? hi : t);
}
}  // namespace

double roundToDType(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return halfToFloat(floatToHalf(static_cast<float>(v)));
    case DType::BF16: return bfloat16ToFloat(floatToBFloat16(static_cast<float>(v)));
    case DType::I64: return saturateInt<int64_t>(v);
    case DType::I32: return saturateInt<int32_t>(v);
    case DType::I8: return saturateInt<int8_t>(v);
    case DType::U8: return saturateInt<uint8_t>(v);
    case DType::Bool: return v != 0 ? 1.0 : 0.0;
  }
  return v;
}

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow -> signed zero
    mant |= 0x800000u;                                 // subnormal half
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp: correct
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    out = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t floatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace kfuse
