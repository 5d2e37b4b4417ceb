#include "frontend/onnx/graph_io.h"

#include <set>

#include "frontend/onnx/tensor_proto.h"
#include "ir/builder.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

// A declared dimension: a size, or the name of a symbolic one ("?" when the
// model gives neither).
struct Dim {
  int64_t size = -1;
  std::string symbol;
};

std::vector<Dim> declaredDims(const onnx::TypeProto_Tensor& t) {
  std::vector<Dim> dims;
  for (const auto& d : t.shape().dim()) {
    if (d.has_dim_value()) dims.push_back({d.dim_value(), ""});
    else dims.push_back({-1, d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?"});
  }
  return dims;
}

std::string formatDeclared(const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) parts.push_back(d.size >= 0 ? std::to_string(d.size) : d.symbol);
  return "[" + join(parts, ",") + "]";
}

// The shape of input `name`: the declared one when fully static, else the
// binding, which must agree with every static dimension.
Expected<Shape> bindShape(const std::string& name, const onnx::TypeProto_Tensor& t, const ShapeBindings& shapes,
                          std::vector<std::string>& unbound) {
  auto bound = shapes.find(name);
  std::vector<Dim> dims = declaredDims(t);
  bool symbolic = !t.has_shape();
  for (const Dim& d : dims) symbolic |= d.size < 0;
  if (bound == shapes.end()) {
    if (!t.has_shape()) {
      unbound.push_back(str("'", name, "' (no shape in the model)"));
      return Shape{};
    }
    if (symbolic) {
      std::vector<std::string> syms;
      for (const Dim& d : dims)
        if (d.size < 0) syms.push_back(d.symbol);
      unbound.push_back(str("'", name, "' ", formatDeclared(dims), " (symbolic: ", join(syms), ")"));
      return Shape{};
    }
    Shape s;
    for (const Dim& d : dims) s.push_back(d.size);
    return s;
  }
  const std::vector<int64_t>& want = bound->second;
  if (t.has_shape() && want.size() != dims.size())
    return Error(str("--shape ", name, "=", join(want, ","), " has rank ", want.size(), ", but the model's input '", name,
                     "' ", formatDeclared(dims), " has rank ", dims.size()));
  for (size_t i = 0; i < dims.size() && t.has_shape(); ++i)
    if (dims[i].size >= 0 && dims[i].size != want[i])
      return Error(str("--shape ", name, "=", join(want, ","), " gives dimension ", i, " as ", want[i],
                       ", but the model fixes it to ", dims[i].size, " ", formatDeclared(dims)));
  return want;
}

}  // namespace

Status addGraphInputs(const onnx::GraphProto& g, const ShapeBindings& shapes, ImportState& s,
                      std::vector<std::string>& unsupported) {
  std::set<std::string> inputs;
  std::vector<std::string> unbound;
  for (const auto& in : g.input()) {
    inputs.insert(in.name());
    if (s.isInitializer(in.name())) continue;  // an initializer listed as input: a parameter
    if (!in.type().has_tensor_type()) {
      unsupported.push_back(str("input '", in.name(), "' is not a tensor (sequences, maps and optionals are not "
                                "supported)"));
      s.poison(in.name());
      continue;
    }
    const auto& t = in.type().tensor_type();
    auto dtype = dtypeFromOnnx(t.elem_type());
    if (!dtype) {
      unsupported.push_back(str("input '", in.name(), "': ", dtype.error().message()));
      s.poison(in.name());
      continue;
    }
    KF_ASSIGN_OR_RETURN(Shape shape, bindShape(in.name(), t, shapes, unbound));
    KF_RETURN_IF_ERROR(checkShapeBounds(shape, str("input '", in.name(), "' shape")));
    if (shape.size() > static_cast<size_t>(kMaxRank)) {
      unsupported.push_back(str("input '", in.name(), "' has rank ", shape.size(), " (kfuse's maximum is ", kMaxRank, ")"));
      s.poison(in.name());
      continue;
    }
    s.define(in.name(), s.graph().addArgument(in.name(), TensorType(*dtype, shape)));
  }
  for (const auto& [name, dims] : shapes)
    if (!inputs.count(name) || s.isInitializer(name))
      return Error(str("--shape names '", name, "', which is not an input of the model"));
  if (!unbound.empty())
    return Error(str("the shapes of these inputs are not fully known: ", join(unbound, "; "),
                     "; give each with --shape NAME=D0,D1,..."));
  return Status::ok();
}

Status setGraphOutputs(const onnx::GraphProto& g, ImportState& s) {
  std::vector<Value*> results;
  std::set<const Value*> named;
  for (const auto& out : g.output()) {
    KF_ASSIGN_OR_RETURN(Value* v, s.valueOf(out.name()));
    // An output needs a node of its own to carry its name when it is an
    // argument, a constant (which may become a parameter), or another output.
    bool ownNode = v->kind() != Value::Kind::Result || v->producer()->opName() == "constant" || named.count(v);
    if (ownNode) v = buildNode(s.graph(), "identity", {v}).value()->result();
    v->setName(out.name());
    named.insert(v);
    results.push_back(v);
    if (!out.type().has_tensor_type()) continue;
    const auto& t = out.type().tensor_type();
    auto dtype = dtypeFromOnnx(t.elem_type());
    if (t.elem_type() != 0 && (!dtype || *dtype != v->type().dtype))
      return Error(str("output '", out.name(), "' is declared as ", onnxTypeName(t.elem_type()), ", but computes ",
                       formatType(v->type())));
    if (!t.has_shape()) continue;
    std::vector<Dim> dims = declaredDims(t);
    bool agree = dims.size() == v->type().rank();
    for (size_t i = 0; agree && i < dims.size(); ++i) agree = dims[i].size < 0 || dims[i].size == v->type().shape[i];
    if (!agree)
      return Error(str("output '", out.name(), "' is declared with shape ", formatDeclared(dims), ", but computes ",
                       formatType(v->type()), " (inconsistent shapes in the model)"));
  }
  s.graph().setResults(results);
  return Status::ok();
}

}  // namespace kfuse::onnx_import
