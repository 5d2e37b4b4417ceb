// Host tensor data: a type and its elements, row-major in the type's memory
// order, little-endian. Used for parameters, constants and interpreter values.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "ir/types.h"

namespace kfuse {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type.
  explicit Tensor(TensorType type);
  // Elements given as doubles, each rounded to the type's dtype.
  static Tensor fromDoubles(TensorType type, const std::vector<double>& values);
  // Scalar (rank-0) tensor.
  static Tensor scalar(DType dtype, double value);
  // A copy of type.byteSize() bytes at `data` (one pass: no zero-fill first).
  static Tensor copyOf(TensorType type, const std::byte* data);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t numElements() const { return type_.numElements(); }
  size_t byteSize() const { return bytes_.size(); }

  std::byte* data() { return bytes_.data(); }
  const std::byte* data() const { return bytes_.data(); }
  template <typename T>
  T* as() { return reinterpret_cast<T*>(bytes_.data()); }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(bytes_.data()); }

  // Element access through doubles: exact for every dtype but i64 beyond 2^53.
  double at(int64_t flatIndex) const;
  void set(int64_t flatIndex, double value);  // rounds to the dtype
  std::vector<double> toDoubles() const;

  // Same type (layout included) and identical bytes.
  bool identical(const Tensor& other) const {
    return type_ == other.type_ && bytes_ == other.bytes_;
  }
  bool operator==(const Tensor& other) const { return identical(other); }
  // Reinterprets the same elements with another shape/layout of equal size.
  Tensor withType(TensorType type) const;

 private:
  TensorType type_;
  std::vector<std::byte> bytes_;
};

}  // namespace kfuse
