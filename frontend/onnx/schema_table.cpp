#include "frontend/onnx/schema_table.h"

#include <algorithm>

#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

#define KF_ATTR(name, type, required) AttributeSchema{#name, type, (required) != 0},
#define KF_ATTRS(...) __VA_ARGS__
#define KF_SCHEMA(op, since, deprecated, minIn, maxIn, minOut, maxOut, attrs) \
  OpSchemaInfo{#op, since, (deprecated) != 0, minIn, maxIn, minOut, maxOut, {attrs}},

// Sorted by op type, then since_version (the generator writes them so).
const std::vector<OpSchemaInfo>& schemas() {
  static const std::vector<OpSchemaInfo> table = {
#include "frontend/onnx/schemas/schema_table.inc"
  };
  return table;
}

#undef KF_SCHEMA
#undef KF_ATTRS
#undef KF_ATTR

std::string_view typeName(int t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT: return "float";
    case onnx::AttributeProto::INT: return "int";
    case onnx::AttributeProto::STRING: return "string";
    case onnx::AttributeProto::TENSOR: return "tensor";
    case onnx::AttributeProto::GRAPH: return "graph";
    case onnx::AttributeProto::FLOATS: return "floats";
    case onnx::AttributeProto::INTS: return "ints";
    case onnx::AttributeProto::STRINGS: return "strings";
    case onnx::AttributeProto::TENSORS: return "tensors";
    case onnx::AttributeProto::GRAPHS: return "graphs";
    case onnx::AttributeProto::SPARSE_TENSOR: return "sparse tensor";
    case onnx::AttributeProto::SPARSE_TENSORS: return "sparse tensors";
    case onnx::AttributeProto::TYPE_PROTO: return "type";
    case onnx::AttributeProto::TYPE_PROTOS: return "types";
    default: return "undefined";
  }
}

std::string countRange(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  if (hi == 2147483647) return str("at least ", lo);
  return str(lo, " to ", hi);
}

}  // namespace

const OpSchemaInfo* findSchema(std::string_view opType, int64_t opset) {
  const auto& all = schemas();
  auto it = std::lower_bound(all.begin(), all.end(), opType,
                             [](const OpSchemaInfo& s, std::string_view op) { return s.opType < op; });
  const OpSchemaInfo* found = nullptr;
  for (; it != all.end() && it->opType == opType && it->sinceVersion <= opset; ++it) found = &*it;
  return found;
}

int firstVersion(std::string_view opType) {
  const auto& all = schemas();
  auto it = std::lower_bound(all.begin(), all.end(), opType,
                             [](const OpSchemaInfo& s, std::string_view op) { return s.opType < op; });
  return it != all.end() && it->opType == opType ? it->sinceVersion : 0;
}

Status checkNode(const onnx::NodeProto& node, const OpSchemaInfo& schema) {
  const std::string op = str(schema.opType, "-", schema.sinceVersion);
  // Trailing empty names are omitted optional inputs or outputs.
  auto present = [](const auto& names) {
    int n = names.size();
    while (n > 0 && names[n - 1].empty()) --n;
    return n;
  };
  int inputs = present(node.input()), outputs = present(node.output());
  if (inputs < schema.minInputs || inputs > schema.maxInputs)
    return Error(str(op, " takes ", countRange(schema.minInputs, schema.maxInputs), " input",
                     schema.maxInputs == 1 ? "" : "s", ", not ", inputs));
  if (outputs < schema.minOutputs || outputs > schema.maxOutputs)
    return Error(str(op, " has ", countRange(schema.minOutputs, schema.maxOutputs), " output",
                     schema.maxOutputs == 1 ? "" : "s", ", not ", outputs));
  for (const onnx::AttributeProto& a : node.attribute()) {
    auto it = std::find_if(schema.attributes.begin(), schema.attributes.end(),
                           [&](const AttributeSchema& s) { return s.name == a.name(); });
    if (it == schema.attributes.end())
      return Error(str("attribute '", a.name(), "' is not defined for ", op));
    // A function body's reference to its caller's attribute is resolved when
    // the function is inlined; writers before ONNX 1.2 left `type` unset.
    if (!a.ref_attr_name().empty() || a.type() == onnx::AttributeProto::UNDEFINED) continue;
    if (a.type() != it->type)
      return Error(str("attribute '", a.name(), "' of ", op, " is ", typeName(a.type()), ", not ", typeName(it->type)));
  }
  for (const AttributeSchema& s : schema.attributes) {
    if (!s.required) continue;
    bool has = std::any_of(node.attribute().begin(), node.attribute().end(),
                           [&](const onnx::AttributeProto& a) { return a.name() == s.name; });
    if (!has) return Error(str(op, " requires attribute '", s.name, "'"));
  }
  return Status::ok();
}

}  // namespace kfuse::onnx_import
