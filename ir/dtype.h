// Element types of the graph IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kfuse {

enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I8, U8, Bool };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
                                       DType::I32, DType::I8,  DType::U8,   DType::Bool};

std::string_view dtypeName(DType t);              // "f32", "bf16", "bool", ...
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType t);                        // bytes per element
bool isFloat(DType t);                            // f32, f16, bf16, f64
bool isInteger(DType t);                          // i64, i32, i8, u8 (not bool)

// Rounds a double to the nearest value representable in `t` (saturating and
// truncating toward zero for integers, 0/1 for bool), the semantics of a store.
double roundToDType(double v, DType t);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t b);

}  // namespace kfuse
