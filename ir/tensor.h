// Host tensor data: a type and its elements, row-major in the type's memory
// order, little-endian. Used for parameters, constants and interpreter values.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "ir/types.h"

namespace kfuse {

// Element storage: cache-line aligned (the cpu runner's steps write a run's
// outputs straight into tensors, runtime/cpu_runner.h) and not filled when
// allocated, so that a tensor about to be overwritten costs no fill pass.
// (A std::vector with an aligned, non-filling allocator kept an empty
// per-byte loop in its destructor: GPT-2's runs, whose logits are 25.7 MB,
// took 48.1 ms instead of 41.0.)
class TensorBytes {
 public:
  TensorBytes() = default;
  explicit TensorBytes(size_t n) : size_(n), data_(n ? static_cast<std::byte*>(::operator new(n, kAlignment)) : nullptr) {}
  TensorBytes(const TensorBytes& o) : TensorBytes(o.size_) {
    if (size_) std::memcpy(data_, o.data_, size_);
  }
  TensorBytes(TensorBytes&& o) noexcept : size_(std::exchange(o.size_, 0)), data_(std::exchange(o.data_, nullptr)) {}
  TensorBytes& operator=(TensorBytes o) noexcept {
    std::swap(size_, o.size_);
    std::swap(data_, o.data_);
    return *this;
  }
  ~TensorBytes() {
    if (data_) ::operator delete(data_, kAlignment);
  }
  size_t size() const { return size_; }
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  bool operator==(const TensorBytes& o) const { return size_ == o.size_ && (!size_ || !std::memcmp(data_, o.data_, size_)); }

 private:
  static constexpr std::align_val_t kAlignment{64};
  size_t size_ = 0;
  std::byte* data_ = nullptr;
};

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
  // A tensor whose bytes are whatever its fresh storage held: for a caller
  // that overwrites every byte before anyone reads one.
  static Tensor uninitialized(TensorType type);

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
  TensorBytes bytes_;
};

}  // namespace kfuse
