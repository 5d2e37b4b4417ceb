// The import driver: validate, find unsupported ops (all of them, before any
// lowering), bind the signature, lower node by node through the op table,
// then clean up (dead code, parameters) and verify.
#include "frontend/onnx/importer.h"

#include <set>

#include "frontend/onnx/graph_io.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/schema_table.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/support/strings.h"
#include "ir/verifier.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

constexpr size_t kMaxListedNodes = 3;    // node names named per unsupported op
constexpr size_t kMaxListedProblems = 30;  // lines in the unsupported-ops message

// Every node input must be a graph input, an initializer or an earlier
// node's output; checked here to name the missing initializer plainly.
Status checkDefinitions(const OnnxModel& m) {
  const onnx::GraphProto& g = m.proto->graph();
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    for (const std::string& in : n.input())
      if (!in.empty() && !defined.count(in))
        return Error(str(m.path, ": ", describeOnnxNode(n, i), " reads '", in,
                         "', which no initializer, graph input or earlier node defines (a missing initializer, or "
                         "nodes out of order)"));
    for (const std::string& out : n.output()) defined.insert(out);
  }
  for (const auto& out : g.output())
    if (!defined.count(out.name())) return Error(str(m.path, ": graph output '", out.name(), "' is never computed"));
  return Status::ok();
}

// Every node of the default domain against its op's schema at the model's
// opset (kfuse's table, so models newer than the ONNX library are checked
// too): an op ONNX does not define at that opset or deprecated, counts,
// attributes.
Status checkNodes(const OnnxModel& m) {
  const onnx::GraphProto& g = m.proto->graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const OpSchemaInfo* schema = findSchema(n.op_type(), m.opset);
    if (!schema) {
      int first = firstVersion(n.op_type());
      return Error(str(m.path, ": not a valid ONNX model: ", describeOnnxNode(n, i), ": ",
                       first ? str("ONNX defines no ", n.op_type(), " at opset ", m.opset, " (it is defined from opset ",
                                   first, ")")
                             : str("ONNX defines no op ", n.op_type())));
    }
    if (schema->deprecated)
      return Error(str(m.path, ": not a valid ONNX model: ", describeOnnxNode(n, i), ": ", n.op_type(),
                       " is deprecated at opset ", m.opset, " (since opset ", schema->sinceVersion, ")"));
    if (Status s = checkNode(n, *schema); !s)
      return Error(str(m.path, ": not a valid ONNX model: ", describeOnnxNode(n, i), ": ", s.error().message()));
  }
  return Status::ok();
}

// Ops without a lowering, grouped by op and reason, each with its nodes.
std::vector<std::string> unsupportedOps(const OnnxModel& m) {
  std::map<std::string, std::vector<std::string>> groups;
  const onnx::GraphProto& g = m.proto->graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    OpResolution r = resolveOp(n.domain(), n.op_type(), m.opset);
    if (r.lowering) continue;
    std::string op = n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type();
    groups[str(op, " (opset ", m.opset, "): ", r.reason)].push_back(
        n.name().empty() ? str("#", i) : quoteString(n.name()));
  }
  std::vector<std::string> out;
  for (const auto& [what, nodes] : groups) {
    std::vector<std::string> shown(nodes.begin(), nodes.begin() + std::min(nodes.size(), kMaxListedNodes));
    std::string more = nodes.size() > kMaxListedNodes ? str(" and ", nodes.size() - kMaxListedNodes, " more") : "";
    out.push_back(str(what, " [node", nodes.size() > 1 ? "s " : " ", join(shown), more, "]"));
  }
  return out;
}

Error unsupportedError(const std::string& path, const std::vector<std::string>& items) {
  std::string msg = str(path, ": the model uses ", items.size(), " unsupported feature", items.size() > 1 ? "s" : "",
                        ":");
  for (size_t i = 0; i < items.size() && i < kMaxListedProblems; ++i) msg += "\n  " + items[i];
  if (items.size() > kMaxListedProblems) msg += str("\n  ... and ", items.size() - kMaxListedProblems, " more");
  return Error(msg);
}

Status addInitializers(const OnnxModel& m, ImportState& s, std::vector<std::string>& unsupported) {
  const onnx::GraphProto& g = m.proto->graph();
  if (g.sparse_initializer_size() > 0) unsupported.push_back("sparse initializers");
  for (const auto& t : g.initializer()) {
    if (s.isInitializer(t.name())) return Error(str(m.path, ": two initializers are named '", t.name(), "'"));
    if (!dtypeFromOnnx(t.data_type())) {
      unsupported.push_back(str("initializer '", t.name(), "': ", dtypeFromOnnx(t.data_type()).error().message()));
      s.poison(t.name());
      continue;
    }
    auto data = tensorFromProto(t, str("initializer '", t.name(), "'"));
    if (!data) return data.error().context(m.path);
    s.addInitializer(t.name(), std::move(*data));
  }
  return Status::ok();
}

// Lowers one node. Nodes that read an output of an unsupported node are
// skipped (their outputs poisoned too), so that every unsupported node of
// the model is found in one import.
Status lowerNode(const OnnxModel& m, int index, ImportState& s, std::vector<std::string>& unsupported) {
  const onnx::NodeProto& n = m.proto->graph().node(index);
  auto poisonOutputs = [&] {
    for (const std::string& out : n.output()) s.poison(out);
  };
  for (const std::string& in : n.input())
    if (!in.empty() && s.isPoisoned(in)) {
      poisonOutputs();
      return Status::ok();
    }
  OpResolution r = resolveOp(n.domain(), n.op_type(), m.opset);
  LoweringContext ctx(s, n, r.version);
  Status st = r.lowering->lower(ctx);
  if (st) {
    std::vector<std::string> unread = ctx.attrs().unread();
    if (!unread.empty())
      st = ctx.unsupported(str("attribute", unread.size() > 1 ? "s " : " ", join(unread), " of ", n.op_type(), "-",
                               r.version, " not supported"));
  }
  std::string where = str(describeOnnxNode(n, index), ", opset ", m.opset);
  if (!st && ctx.isUnsupported()) {
    unsupported.push_back(str(where, ": ", st.error().message()));
    poisonOutputs();
    return Status::ok();
  }
  if (!st) return Error(str(m.path, ": ", where, ": ", st.error().message()));
  if (!ctx.allOutputsSet())
    return Error(str(m.path, ": ", where, ": internal error: the lowering left an output undefined"));
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<Module>> importModel(const OnnxModel& model, const ImportOptions& opts,
                                              ImportReport* report) {
  ImportReport local;
  ImportReport& rep = report ? *report : local;
  rep.unsupported.clear();
  KF_RETURN_IF_ERROR(checkDefinitions(model));
  KF_RETURN_IF_ERROR(checkNodes(model));
  KF_RETURN_IF_ERROR(checkWithOnnxChecker(model));
  rep.unsupported = unsupportedOps(model);
  if (!rep.unsupported.empty()) return unsupportedError(model.path, rep.unsupported);

  const onnx::GraphProto& g = model.proto->graph();
  auto module = std::make_unique<Module>(g.name().empty() ? std::string("model") : g.name());
  Graph* fn = module->addFunction("main");
  ImportState state(*module, *fn);
  KF_RETURN_IF_ERROR(addInitializers(model, state, rep.unsupported));
  if (Status s = addGraphInputs(g, opts.shapes, state, rep.unsupported); !s) return s.error().context(model.path);
  std::set<std::string> consumed;
  for (const auto& n : g.node()) consumed.insert(n.input().begin(), n.input().end());
  for (const auto& out : g.output()) consumed.insert(out.name());
  state.setConsumed(std::move(consumed));
  for (int i = 0; i < g.node_size(); ++i) KF_RETURN_IF_ERROR(lowerNode(model, i, state, rep.unsupported));
  if (!rep.unsupported.empty()) return unsupportedError(model.path, rep.unsupported);
  if (Status s = setGraphOutputs(g, state); !s) return s.error().context(model.path);
  state.finish();
  if (Status s = verifyModule(*module); !s)
    return Error(str(model.path, ": internal error: the imported module does not verify: ", s.error().message()));
  return module;
}

Expected<std::unique_ptr<Module>> importModelFile(const std::string& path, const ImportOptions& opts,
                                                  ImportReport* report) {
  KF_ASSIGN_OR_RETURN(OnnxModel model, loadModelFile(path, report));
  return importModel(model, opts, report);
}

std::vector<std::string> runtimeInputNames(const OnnxModel& model) {
  std::set<std::string> initializers;
  for (const auto& t : model.proto->graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto& in : model.proto->graph().input())
    if (!initializers.count(in.name())) names.push_back(in.name());
  return names;
}

std::string supportedOpsMarkdown() {
  std::string out;
  for (const OpLowering* l : allLowerings()) {
    std::vector<std::string> versions;
    for (int v : l->versions) versions.push_back(std::to_string(v));
    std::string lowered;
    for (char ch : l->loweredTo) lowered += ch == '|' ? std::string("\\|") : std::string(1, ch);
    out += str("| ", l->opType, " | ", join(versions), " | ", lowered, " |\n");
  }
  return out;
}

}  // namespace kfuse::onnx_import
