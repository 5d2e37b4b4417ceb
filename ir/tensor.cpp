#include "ir/tensor.h"

#include <cassert>

namespace kfuse {

Tensor::Tensor(TensorType type) : type_(std::move(type)), bytes_(type_.byteSize()) {
  if (bytes_.size()) std::memset(bytes_.data(), 0, bytes_.size());
}

Tensor Tensor::uninitialized(TensorType type) {
  Tensor t;
  t.bytes_ = TensorBytes(type.byteSize());
  t.type_ = std::move(type);
  return t;
}

Tensor Tensor::fromDoubles(TensorType type, const std::vector<double>& values) {
  Tensor t(std::move(type));
  assert(static_cast<int64_t>(values.size()) == t.numElements());
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) { return fromDoubles(TensorType(dtype, {}), {value}); }

Tensor Tensor::copyOf(TensorType type, const std::byte* data) {
  Tensor t = uninitialized(std::move(type));
  if (t.byteSize()) std::memcpy(t.data(), data, t.byteSize());
  return t;
}

Tensor Tensor::withType(TensorType type) const {
  assert(type.byteSize() == type_.byteSize());
  Tensor t = *this;
  t.type_ = std::move(type);
  return t;
}

namespace {
template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
}  // namespace

double Tensor::at(int64_t i) const {
  const std::byte* p = bytes_.data() + static_cast<size_t>(i) * dtypeSize(type_.dtype);
  switch (type_.dtype) {
    case DType::F32: return load<float>(p);
    case DType::F16: return halfToFloat(load<uint16_t>(p));
    case DType::BF16: return bfloat16ToFloat(load<uint16_t>(p));
    case DType::F64: return load<double>(p);
    case DType::I64: return static_cast<double>(load<int64_t>(p));
    case DType::I32: return load<int32_t>(p);
    case DType::I8: return load<int8_t>(p);
    case DType::U8: return load<uint8_t>(p);
    case DType::Bool: return load<uint8_t>(p) ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  std::byte* p = bytes_.data() + static_cast<size_t>(i) * dtypeSize(type_.dtype);
  double r = roundToDType(v, type_.dtype);
  switch (type_.dtype) {
    case DType::F32: store(p, static_cast<float>(r)); break;
    case DType::F16: store(p, floatToHalf(static_cast<float>(r))); break;
    case DType::BF16: store(p, floatToBFloat16(static_cast<float>(r))); break;
    case DType::F64: store(p, r); break;
    case DType::I64: store(p, static_cast<int64_t>(r)); break;
    case DType::I32: store(p, static_cast<int32_t>(r)); break;
    case DType::I8: store(p, static_cast<int8_t>(r)); break;
    case DType::U8: store(p, static_cast<uint8_t>(r)); break;
    case DType::Bool: store(p, static_cast<uint8_t>(r != 0)); break;
  }
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(static_cast<size_t>(numElements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = at(static_cast<int64_t>(i));
  return out;
}

}  // namespace kfuse
