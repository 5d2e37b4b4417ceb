#include "frontend/onnx/functions.h"

#include <map>
#include <set>

#include <google/protobuf/unknown_field_set.h>

#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr int kMaxDepth = 16;  // nested calls; deeper is a cycle or absurd

// Fields of IR versions after Debian's ONNX 1.12, whose generated classes
// lack them: protobuf keeps them as unknown fields.
constexpr int kFunctionAttributeProto = 11;  // FunctionProto.attribute_proto: defaults
constexpr int kFunctionOverload = 13;        // FunctionProto.overload
constexpr int kNodeOverload = 8;             // NodeProto.overload

std::string unknownString(const google::protobuf::Message& m, int number) {
  const UnknownFieldSet& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i)
    if (fields.field(i).number() == number && fields.field(i).type() == UnknownField::TYPE_LENGTH_DELIMITED)
      return fields.field(i).length_delimited();
  return "";
}

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::map<std::string, onnx::AttributeProto> defaults;  // attribute_proto, by name
};

std::string key(const std::string& domain, const std::string& name, const std::string& overload) {
  return str(domain, "\x1f", name, "\x1f", overload);
}

class Inliner {
 public:
  Inliner(const onnx::ModelProto& m, const std::string& path) : path_(path) {
    for (const auto& o : m.opset_import()) modelOpsets_[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
    for (const onnx::FunctionProto& f : m.functions()) {
      Function fn{&f, {}};
      const UnknownFieldSet& fields = f.GetReflection()->GetUnknownFields(f);
      for (int i = 0; i < fields.field_count(); ++i) {
        if (fields.field(i).number() != kFunctionAttributeProto) continue;
        onnx::AttributeProto a;
        if (a.ParseFromString(fields.field(i).length_delimited())) fn.defaults[a.name()] = a;
      }
      functions_[key(f.domain(), f.name(), unknownString(f, kFunctionOverload))] = fn;
    }
  }

  Status run(onnx::GraphProto& g) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (const onnx::NodeProto& n : g.node()) KF_RETURN_IF_ERROR(expand(n, out, 0));
    g.mutable_node()->Swap(&out);
    return Status::ok();
  }

 private:
  const Function* find(const onnx::NodeProto& n) const {
    auto it = functions_.find(key(n.domain(), n.op_type(), unknownString(n, kNodeOverload)));
    return it == functions_.end() ? nullptr : &it->second;
  }

  Status expand(const onnx::NodeProto& n, google::protobuf::RepeatedPtrField<onnx::NodeProto>& out, int depth) {
    const Function* f = find(n);
    if (!f) {
      *out.Add() = n;
      return Status::ok();
    }
    const onnx::FunctionProto& fp = *f->proto;
    const std::string where = str("node '", n.name(), "' (", n.domain().empty() ? "" : n.domain() + ".", n.op_type(),
                                  ", a model-local function)");
    if (depth >= kMaxDepth)
      return Error(str(path_, ": model-local function ", fp.domain(), ".", fp.name(), ": calls nest deeper than ",
                       kMaxDepth, " (a function that calls itself?)"));
    KF_RETURN_IF_ERROR(checkOpsets(fp, where));
    if (n.input_size() > fp.input_size() || n.output_size() > fp.output_size())
      return Error(str(path_, ": ", where, ": ", n.input_size(), " inputs and ", n.output_size(),
                       " outputs, the function declares ", fp.input_size(), " and ", fp.output_size()));
    // Formal names -> the caller's; every other name the body defines gets
    // a prefix unique to this call.
    std::map<std::string, std::string> rename;
    for (int i = 0; i < fp.input_size(); ++i) rename[fp.input(i)] = i < n.input_size() ? n.input(i) : "";
    for (int i = 0; i < fp.output_size(); ++i) rename[fp.output(i)] = i < n.output_size() ? n.output(i) : "";
    // Body nodes are named under the call ("/block1/LinearAct/MatMul"), the
    // provenance kfuse keeps; values get a prefix unique to this call.
    const std::string caller = n.name().empty() ? fp.name() : n.name();
    const std::string prefix = str(caller, "/#", calls_++, "/");
    for (const onnx::NodeProto& body : fp.node()) {
      onnx::NodeProto copy = body;
      copy.set_name(str(caller, "/", body.name().empty() ? body.op_type() : body.name()));
      for (int i = 0; i < copy.input_size(); ++i) {
        if (copy.input(i).empty()) continue;
        auto it = rename.find(copy.input(i));
        if (it == rename.end())
          return Error(str(path_, ": ", where, ": the body reads '", copy.input(i),
                           "', which is neither a function input nor defined before it in the body"));
        copy.set_input(i, it->second);
      }
      for (int i = 0; i < copy.output_size(); ++i) {
        if (copy.output(i).empty()) continue;
        auto [it, added] = rename.emplace(copy.output(i), prefix + copy.output(i));
        copy.set_output(i, it->second);
      }
      KF_RETURN_IF_ERROR(bindAttributes(copy, n, *f, where));
      KF_RETURN_IF_ERROR(expand(copy, out, depth + 1));
    }
    return Status::ok();
  }

  // A body attribute that refers to the function's (ref_attr_name) takes the
  // caller's value, else the function's default, else is dropped (ONNX: an
  // optional attribute the caller left unset).
  Status bindAttributes(onnx::NodeProto& body, const onnx::NodeProto& call, const Function& f,
                        const std::string& where) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> bound;
    for (const onnx::AttributeProto& a : body.attribute()) {
      if (a.ref_attr_name().empty()) {
        *bound.Add() = a;
        continue;
      }
      const onnx::AttributeProto* value = nullptr;
      for (const onnx::AttributeProto& given : call.attribute())
        if (given.name() == a.ref_attr_name()) value = &given;
      if (!value)
        if (auto it = f.defaults.find(a.ref_attr_name()); it != f.defaults.end()) value = &it->second;
      if (!value) continue;
      if (a.type() != onnx::AttributeProto::UNDEFINED && value->type() != a.type())
        return Error(str(path_, ": ", where, ": attribute '", a.ref_attr_name(), "' has the wrong type for '",
                         a.name(), "' of the body's ", body.op_type()));
      onnx::AttributeProto copy = *value;
      copy.set_name(a.name());
      *bound.Add() = copy;
    }
    body.mutable_attribute()->Swap(&bound);
    return Status::ok();
  }

  // The body's nodes are read at the model's opsets: a function importing
  // another version of a domain the model uses would need a version
  // converter, which kfuse does not have.
  Status checkOpsets(const onnx::FunctionProto& f, const std::string& where) {
    for (const auto& o : f.opset_import()) {
      std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
      auto it = modelOpsets_.find(domain);
      if (it != modelOpsets_.end() && it->second != o.version())
        return Error(str(path_, ": ", where, ": the function imports opset ", o.version(), " of '",
                         domain.empty() ? "ai.onnx" : domain, "', the model ", it->second,
                         " (kfuse inlines functions of the model's own opsets only)"));
    }
    return Status::ok();
  }

  std::string path_;
  std::map<std::string, int64_t> modelOpsets_;
  std::map<std::string, Function> functions_;
  int calls_ = 0;
};

}  // namespace

Status inlineFunctions(onnx::ModelProto& model, const std::string& path) {
  if (model.functions_size() == 0) return Status::ok();
  Inliner inliner(model, path);
  KF_RETURN_IF_ERROR(inliner.run(*model.mutable_graph()));
  model.clear_functions();
  return Status::ok();
}

}  // namespace kfuse::onnx_import
