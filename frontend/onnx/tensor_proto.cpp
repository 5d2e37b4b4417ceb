#include "frontend/onnx/tensor_proto.h"

#include <cstring>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

using onnx::TensorProto;

struct TypeName {
  int code;
  const char* name;
};
constexpr TypeName kTypeNames[] = {
    {TensorProto::FLOAT, "FLOAT"},     {TensorProto::UINT8, "UINT8"},         {TensorProto::INT8, "INT8"},
    {TensorProto::UINT16, "UINT16"},   {TensorProto::INT16, "INT16"},         {TensorProto::INT32, "INT32"},
    {TensorProto::INT64, "INT64"},     {TensorProto::STRING, "STRING"},       {TensorProto::BOOL, "BOOL"},
    {TensorProto::FLOAT16, "FLOAT16"}, {TensorProto::DOUBLE, "DOUBLE"},       {TensorProto::UINT32, "UINT32"},
    {TensorProto::UINT64, "UINT64"},   {TensorProto::COMPLEX64, "COMPLEX64"}, {TensorProto::COMPLEX128, "COMPLEX128"},
    {TensorProto::BFLOAT16, "BFLOAT16"},
    // Types of IR versions after Debian's ONNX 1.12, by number.
    {17, "FLOAT8E4M3FN"},              {18, "FLOAT8E4M3FNUZ"},                {19, "FLOAT8E5M2"},
    {20, "FLOAT8E5M2FNUZ"},            {21, "UINT4"},                         {22, "INT4"},
    {23, "FLOAT4E2M1"},                {24, "FLOAT8E8M0"},                    {25, "UINT2"},
    {26, "INT2"},                      {27, "FLOAT6E2M3"},                    {28, "FLOAT6E3M2"},
};

// Copies `count` elements of the typed repeated field into t, converting
// each through the dtype's storage type.
template <typename Field>
Status copyTypedField(const Field& field, Tensor& t, const std::string& what, const char* fieldName) {
  auto count = static_cast<size_t>(t.numElements());
  if (static_cast<size_t>(field.size()) != count)
    return Error(str(what, " has ", field.size(), " values in ", fieldName, ", its shape ", formatDims(t.shape()),
                     " needs ", count));
  for (size_t i = 0; i < count; ++i) {
    auto v = field.Get(static_cast<int>(i));
    std::byte* p = t.data() + i * dtypeSize(t.dtype());
    switch (t.dtype()) {
      case DType::F32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DType::F64: { double d = static_cast<double>(v); std::memcpy(p, &d, 8); break; }
      case DType::I64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
      case DType::I32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
      // f16 and bf16 travel in int32_data as their bit patterns.
      case DType::F16:
      case DType::BF16: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
      case DType::I8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
      case DType::U8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
      case DType::Bool: { uint8_t x = v != 0 ? 1 : 0; std::memcpy(p, &x, 1); break; }
    }
  }
  return Status::ok();
}

// The number of values the typed field for `t` holds.
int64_t typedFieldSize(const TensorProto& p, DType t) {
  switch (t) {
    case DType::F32: return p.float_data_size();
    case DType::F64: return p.double_data_size();
    case DType::I64: return p.int64_data_size();
    default: return p.int32_data_size();
  }
}

const char* typedFieldName(DType t) {
  switch (t) {
    case DType::F32: return "float_data";
    case DType::F64: return "double_data";
    case DType::I64: return "int64_data";
    default: return "int32_data";
  }
}

Status readTypedData(const TensorProto& p, Tensor& t, const std::string& what) {
  switch (t.dtype()) {
    case DType::F32: return copyTypedField(p.float_data(), t, what, "float_data");
    case DType::F64: return copyTypedField(p.double_data(), t, what, "double_data");
    case DType::I64: return copyTypedField(p.int64_data(), t, what, "int64_data");
    default: return copyTypedField(p.int32_data(), t, what, "int32_data");
  }
}

}  // namespace

Expected<DType> dtypeFromOnnx(int onnxType) {
  switch (onnxType) {
    case TensorProto::FLOAT: return DType::F32;
    case TensorProto::FLOAT16: return DType::F16;
    case TensorProto::BFLOAT16: return DType::BF16;
    case TensorProto::DOUBLE: return DType::F64;
    case TensorProto::INT64: return DType::I64;
    case TensorProto::INT32: return DType::I32;
    case TensorProto::INT8: return DType::I8;
    case TensorProto::UINT8: return DType::U8;
    case TensorProto::BOOL: return DType::Bool;
    default: return Error(str(onnxTypeName(onnxType), " elements are not supported"));
  }
}

int onnxTypeOf(DType t) {
  switch (t) {
    case DType::F32: return TensorProto::FLOAT;
    case DType::F16: return TensorProto::FLOAT16;
    case DType::BF16: return TensorProto::BFLOAT16;
    case DType::F64: return TensorProto::DOUBLE;
    case DType::I64: return TensorProto::INT64;
    case DType::I32: return TensorProto::INT32;
    case DType::I8: return TensorProto::INT8;
    case DType::U8: return TensorProto::UINT8;
    case DType::Bool: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

std::string onnxTypeName(int onnxType) {
  for (const TypeName& t : kTypeNames)
    if (t.code == onnxType) return t.name;
  return str("type ", onnxType);
}

Expected<Shape> shapeOfProto(const TensorProto& p, const std::string& what) {
  Shape shape(p.dims().begin(), p.dims().end());
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return Error(str(what, " has rank ", shape.size(), ", above kfuse's maximum of ", kMaxRank));
  if (Status s = checkShapeBounds(shape, str(what, " shape")); !s) return s.error();
  return shape;
}

Expected<Tensor> tensorFromProto(const TensorProto& p, const std::string& what) {
  if (p.data_location() == TensorProto::EXTERNAL)
    return Error(str(what, ": external data was not loaded (internal error)"));
  if (p.has_segment()) return Error(str(what, " is segmented, which kfuse does not support"));
  auto dtype = dtypeFromOnnx(p.data_type());
  if (!dtype) return dtype.error().context(what);
  KF_ASSIGN_OR_RETURN(Shape shape, shapeOfProto(p, what));
  TensorType type(*dtype, shape);
  // The data present must match the shape before anything is allocated: a
  // corrupt file can claim absurd dims with no data behind them.
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (raw.size() != type.byteSize())
      return Error(str(what, " has ", raw.size(), " bytes of raw_data, its type ", formatType(type), " needs ",
                       type.byteSize()));
    Tensor t(type);
    if (!raw.empty()) std::memcpy(t.data(), raw.data(), raw.size());
    if (t.dtype() == DType::Bool)  // any non-zero byte is true; kfuse stores 0/1
      for (size_t i = 0; i < t.byteSize(); ++i) t.data()[i] = std::byte{t.data()[i] != std::byte{0}};
    return t;
  }
  if (typedFieldSize(p, *dtype) != type.numElements())
    return Error(str(what, " has ", typedFieldSize(p, *dtype), " values in ", typedFieldName(*dtype), ", its shape ",
                     formatDims(shape), " needs ", type.numElements()));
  Tensor t(type);
  KF_RETURN_IF_ERROR(readTypedData(p, t, what));
  return t;
}

void tensorToProto(const Tensor& t, const std::string& name, TensorProto& out) {
  out.Clear();
  out.set_name(name);
  out.set_data_type(onnxTypeOf(t.dtype()));
  for (int64_t d : t.shape()) out.add_dims(d);
  out.set_raw_data(reinterpret_cast<const char*>(t.data()), t.byteSize());
}

Expected<Tensor> readTensorFile(const std::string& path, std::string* nameOut, bool* unsupportedType) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  TensorProto p;
  if (!p.ParseFromString(bytes))
    return Error(str("'", path, "' is not a serialized ONNX TensorProto (corrupt or truncated)"));
  if (!p.has_data_type() || p.data_type() == TensorProto::UNDEFINED)
    return Error(str("'", path, "' is not a serialized ONNX TensorProto (no data type)"));
  if (p.data_location() == TensorProto::EXTERNAL)
    return Error(str("'", path, "' refers to external data, which .pb input files may not"));
  if (nameOut) *nameOut = p.name();
  if (unsupportedType && !dtypeFromOnnx(p.data_type())) *unsupportedType = true;
  return tensorFromProto(p, str("'", path, "'"));
}

Status writeTensorFile(const std::string& path, const Tensor& t, const std::string& name) {
  TensorProto p;
  tensorToProto(t, name, p);
  std::string bytes;
  if (!p.SerializeToString(&bytes)) return Error(str("cannot serialize tensor '", name, "'"));
  return writeFileAtomically(path, bytes);
}

}  // namespace kfuse::onnx_import
