#include "frontend/onnx/attributes.h"

#include "frontend/onnx/tensor_proto.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

using onnx::AttributeProto;

const char* typeName(int t) {
  switch (t) {
    case AttributeProto::FLOAT: return "a float";
    case AttributeProto::INT: return "an int";
    case AttributeProto::STRING: return "a string";
    case AttributeProto::TENSOR: return "a tensor";
    case AttributeProto::GRAPH: return "a graph";
    case AttributeProto::FLOATS: return "a list of floats";
    case AttributeProto::INTS: return "a list of ints";
    case AttributeProto::STRINGS: return "a list of strings";
    case AttributeProto::TENSORS: return "a list of tensors";
    case AttributeProto::GRAPHS: return "a list of graphs";
    case AttributeProto::SPARSE_TENSOR: return "a sparse tensor";
    case AttributeProto::TYPE_PROTO: return "a type";
    default: return "an attribute of unknown type";
  }
}

Error missing(const std::string& name) { return Error(str("the required attribute '", name, "' is missing")); }

}  // namespace

const AttributeProto* NodeAttributes::find(const std::string& name) const {
  for (const AttributeProto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

Expected<const AttributeProto*> NodeAttributes::typed(const std::string& name, int type) const {
  read_.insert(name);
  const AttributeProto* a = find(name);
  if (!a) return static_cast<const AttributeProto*>(nullptr);
  // Writers before ONNX 1.2 left `type` unset; infer it from the field set.
  int actual = a->type();
  if (actual == AttributeProto::UNDEFINED) {
    if (a->has_i()) actual = AttributeProto::INT;
    else if (a->has_f()) actual = AttributeProto::FLOAT;
    else if (a->has_s()) actual = AttributeProto::STRING;
    else if (a->has_t()) actual = AttributeProto::TENSOR;
    else if (a->ints_size()) actual = AttributeProto::INTS;
    else if (a->floats_size()) actual = AttributeProto::FLOATS;
  }
  if (actual != type)
    return Error(str("attribute '", name, "' must be ", typeName(type), ", got ", typeName(actual)));
  return a;
}

Expected<int64_t> NodeAttributes::getInt(const std::string& name, std::optional<int64_t> def) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::INT));
  if (a) return a->i();
  if (def) return *def;
  return missing(name);
}

Expected<double> NodeAttributes::getFloat(const std::string& name, std::optional<double> def) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::FLOAT));
  if (a) return static_cast<double>(a->f());
  if (def) return *def;
  return missing(name);
}

Expected<std::string> NodeAttributes::getString(const std::string& name, std::optional<std::string> def) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::STRING));
  if (a) return a->s();
  if (def) return *def;
  return missing(name);
}

Expected<std::vector<int64_t>> NodeAttributes::getInts(const std::string& name,
                                                       std::optional<std::vector<int64_t>> def) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::INTS));
  if (a) return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  if (def) return *def;
  return missing(name);
}

Expected<std::vector<double>> NodeAttributes::getFloats(const std::string& name,
                                                        std::optional<std::vector<double>> def) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::FLOATS));
  if (a) return std::vector<double>(a->floats().begin(), a->floats().end());
  if (def) return *def;
  return missing(name);
}

Expected<Tensor> NodeAttributes::getTensor(const std::string& name) const {
  KF_ASSIGN_OR_RETURN(const AttributeProto* a, typed(name, AttributeProto::TENSOR));
  if (!a) return missing(name);
  return tensorFromProto(a->t(), str("attribute '", name, "'"));
}

std::vector<std::string> NodeAttributes::unread() const {
  std::vector<std::string> out;
  for (const AttributeProto& a : node_.attribute())
    if (!read_.count(a.name())) out.push_back(a.name());
  return out;
}

}  // namespace kfuse::onnx_import
