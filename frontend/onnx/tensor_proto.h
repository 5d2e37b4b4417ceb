// Conversion between ONNX TensorProto and kfuse Tensor: initializers,
// Constant values, and the .pb input/output files of `kfuse run` and of
// ONNX's backend-test folders (test_data_set_*/input_0.pb).
#pragma once

#include <string>

#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kfuse::onnx_import {

// kfuse dtype of an ONNX TensorProto.DataType code; an Error names the ONNX
// type ("UINT16 elements are not supported") for the rest.
Expected<DType> dtypeFromOnnx(int onnxType);
int onnxTypeOf(DType t);
// "FLOAT", "INT64", ... or "type 42" for unknown codes.
std::string onnxTypeName(int onnxType);

// The tensor's shape, checked: non-negative dims, rank <= kMaxRank, and an
// element count that fits (absurd dims are an Error, never an overflow).
// `what` names the tensor in messages ("initializer 'fc.weight'").
Expected<Shape> shapeOfProto(const onnx::TensorProto& p, const std::string& what);

// The data of a TensorProto whose external data, if any, has been inlined
// (see external_data.h). Reads raw_data or the typed fields (float_data,
// int32_data for 8/16-bit types and bool, int64_data, double_data), checking
// the element count.
Expected<Tensor> tensorFromProto(const onnx::TensorProto& p, const std::string& what);
// raw_data encoding, as ONNX's numpy_helper.from_array writes it.
void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& out);

// A serialized TensorProto file (.pb). `nameOut`, when given, receives the
// proto's name field (empty when the file has none); `unsupportedType` is
// set when the file is fine but holds elements kfuse has no dtype for.
Expected<Tensor> readTensorFile(const std::string& path, std::string* nameOut = nullptr,
                                bool* unsupportedType = nullptr);
Status writeTensorFile(const std::string& path, const Tensor& t, const std::string& name);

}  // namespace kfuse::onnx_import
