// Typed node attributes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace kfuse {

enum class AttrKind : uint8_t { Int, Float, Bool, String, Ints, Floats, Tensor };

std::string_view attrKindName(AttrKind k);  // "int", "float", "int list", ...

class Attribute {
 public:
  Attribute() : v_(int64_t{0}) {}
  Attribute(int64_t v) : v_(v) {}                      // NOLINT: implicit by design
  Attribute(int v) : v_(int64_t{v}) {}                 // NOLINT
  Attribute(double v) : v_(v) {}                       // NOLINT
  Attribute(bool v) : v_(v) {}                         // NOLINT
  Attribute(std::string v) : v_(std::move(v)) {}       // NOLINT
  Attribute(const char* v) : v_(std::string(v)) {}     // NOLINT
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<double> v) : v_(std::move(v)) {}   // NOLINT
  Attribute(kfuse::Tensor v) : v_(std::move(v)) {}         // NOLINT

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  int64_t asInt() const { return std::get<int64_t>(v_); }
  double asFloat() const { return std::get<double>(v_); }
  bool asBool() const { return std::get<bool>(v_); }
  const std::string& asString() const { return std::get<std::string>(v_); }
  const std::vector<int64_t>& asInts() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<double>& asFloats() const { return std::get<std::vector<double>>(v_); }
  const kfuse::Tensor& asTensor() const { return std::get<kfuse::Tensor>(v_); }

  bool operator==(const Attribute& o) const;

 private:
  // Order matches AttrKind.
  std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>, kfuse::Tensor> v_;
};

// Attributes of a node by name (ordered: printing and hashing are deterministic).
using AttrMap = std::map<std::string, Attribute, std::less<>>;

// Textual form used by the IR printer: 3, 0.5, true, "tanh", [1, 2], [0.5],
// dense<f32[2]>[1.0, 2.0].
std::string formatAttribute(const Attribute& a);
// Tensor data as a bracketed flat list of its elements.
std::string formatTensorElements(const Tensor& t);

}  // namespace kfuse
