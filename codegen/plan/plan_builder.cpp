#include "codegen/plan/plan_builder.h"

#include <map>
#include <set>

#include "codegen/kernel/lower.h"
#include "ir/kernel_form.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse {
namespace {

// Ops that only rename a contiguous buffer: they alias their operand.
bool isView(const Node& n) {
  static const std::set<std::string, std::less<>> views = {"reshape", "squeeze", "unsqueeze", "flatten", "identity"};
  return views.count(n.opName()) > 0;
}

// A one-node body: the distinct operands (splat constants copied in) as
// arguments, every result as a result.
std::unique_ptr<Graph> singleNodeBody(const Node& n, std::vector<const Value*>& args) {
  auto body = std::make_unique<Graph>(std::string(n.opName()), nullptr);
  std::map<const Value*, Value*> map;
  std::vector<Value*> operands;
  for (Value* v : n.operands()) {
    auto it = map.find(v);
    if (it == map.end()) {
      if (v->producer() && isSplatConstant(*v->producer())) {
        Node* c = body->createNode(v->producer()->op(), {}, {v->type()}, v->producer()->attrs());
        it = map.emplace(v, c->result()).first;
      } else {
        it = map.emplace(v, body->addArgument(str("in", args.size()), v->type())).first;
        args.push_back(v);
      }
    }
    operands.push_back(it->second);
  }
  std::vector<TensorType> types;
  for (size_t i = 0; i < n.numResults(); ++i) types.push_back(n.result(i)->type());
  Node* c = body->createNode(n.op(), operands, types, n.attrs());
  body->setResults(c->results());
  return body;
}

class PlanBuilder {
 public:
  explicit PlanBuilder(const Graph& g) : g_(g), names_(g) { plan_.function = g.name(); }

  Expected<Plan> run() {
    for (size_t i = 0; i < g_.arguments().size(); ++i) {
      const Value* a = g_.argument(i);
      int b = add({names_(a), a->type(), BufferKind::Input, i});
      ids_[a] = b;
      plan_.inputs.push_back(b);
    }
    for (const auto& n : g_.nodeList()) {
      size_t before = plan_.steps.size();
      KF_RETURN_IF_ERROR(lowerNode(*n));
      for (size_t i = before; i < plan_.steps.size(); ++i) {
        plan_.steps[i].phase = n->phase;
        if (n->body()) plan_.steps[i].ops = n->body()->numNodes();
      }
    }
    for (const Value* r : g_.results()) plan_.outputs.push_back(bufferOf(r));
    for (const StateUpdate& u : g_.stateUpdates()) plan_.updates.emplace_back(u.param, bufferOf(u.value));
    return plan_;
  }

 private:
  int add(PlanBuffer b) {
    plan_.buffers.push_back(std::move(b));
    return static_cast<int>(plan_.buffers.size() - 1);
  }

  int bufferOf(const Value* v) {
    if (auto it = ids_.find(v); it != ids_.end()) return it->second;
    // Parameters get their buffer on first use.
    PlanBuffer b{names_(v), v->type(), BufferKind::Param};
    b.param = v->name();
    int id = add(std::move(b));
    ids_[v] = id;
    return id;
  }

  int temp(const Value* v) {
    int id = add({names_(v), v->type(), BufferKind::Temp});
    ids_[v] = id;
    return id;
  }

  std::string uniqueName(std::string base) {
    if (int n = kernelNames_[base]++; n > 0) base = str(base, "_", n);
    return base;
  }

  Status lowerNode(const Node& n) {
    if (n.opName() == "constant") {
      PlanBuffer b{names_(n.result()), n.result()->type(), BufferKind::Constant};
      b.constant = std::make_shared<const Tensor>(n.attr("value").asTensor());
      ids_[n.result()] = add(std::move(b));
      return Status::ok();
    }
    if (isView(n)) {
      PlanBuffer b{names_(n.result()), n.result()->type(), BufferKind::Alias};
      b.aliasOf = bufferOf(n.operand(0));
      ids_[n.result()] = add(std::move(b));
      return Status::ok();
    }
    if (n.body()) {
      std::vector<const Value*> args(n.operands().begin(), n.operands().end());
      return lowerGroupNode(n, *n.body(), n.body()->name(), args);
    }
    if (n.opName() == "matmul") {
      Step s;
      s.kind = StepKind::Gemm;
      s.name = uniqueName("matmul");
      KF_ASSIGN_OR_RETURN(s.gemm, gemmSpec(n, bufferOf(n.operand(0)), bufferOf(n.operand(1)), temp(n.result())));
      plan_.steps.push_back(std::move(s));
      return Status::ok();
    }
    if (kernelFormIssue(n).empty()) {
      std::vector<const Value*> args;
      std::unique_ptr<Graph> body = singleNodeBody(n, args);
      return lowerGroupNode(n, *body, std::string(n.opName()), args);
    }
    return reference(n);
  }

  Status reference(const Node& n) {
    Step s;
    s.kind = StepKind::Reference;
    s.name = uniqueName(std::string(n.opName()));
    s.op = &n.op();
    s.attrs = n.attrs();
    for (const Value* v : n.operands()) s.inputs.push_back(bufferOf(v));
    for (size_t i = 0; i < n.numResults(); ++i) s.outputs.push_back(temp(n.result(i)));
    plan_.steps.push_back(std::move(s));
    return Status::ok();
  }

  // The node's operands and results play the body's arguments and results.
  Status lowerGroupNode(const Node& n, const Graph& body, const std::string& name,
                        const std::vector<const Value*>& args) {
    std::string kernelName = uniqueName(name);
    KF_ASSIGN_OR_RETURN(kernel::LoweredGroup lowered, kernel::lowerGroup(body, kernelName));
    std::vector<int> results;
    for (size_t i = 0; i < n.numResults(); ++i) results.push_back(temp(n.result(i)));
    Step s;
    s.name = kernelName;
    int gemmOut = -1;
    if (lowered.gemm) {
      s.kind = StepKind::Gemm;
      gemmOut = lowered.gemmResult >= 0 ? results[static_cast<size_t>(lowered.gemmResult)]
                                        : add({kernelName + ".gemm", lowered.gemm->result()->type(), BufferKind::Temp});
      auto argBuffer = [&](const Value* v) {
        for (size_t i = 0; i < body.arguments().size(); ++i)
          if (body.argument(i) == v) return bufferOf(args[i]);
        return -1;
      };
      KF_ASSIGN_OR_RETURN(s.gemm, gemmSpec(*lowered.gemm, argBuffer(lowered.gemm->operand(0)),
                                           argBuffer(lowered.gemm->operand(1)), gemmOut));
    }
    for (size_t k = 0; k < lowered.kernels.size(); ++k) {
      std::vector<int> buffers;
      for (const kernel::BufferRef& r : lowered.buffers[k]) {
        switch (r.kind) {
          case kernel::BufferRef::Kind::Argument: buffers.push_back(bufferOf(args[r.index])); break;
          case kernel::BufferRef::Kind::Result: buffers.push_back(results[r.index]); break;
          case kernel::BufferRef::Kind::Gemm: buffers.push_back(gemmOut); break;
        }
      }
      s.kernels.push_back(static_cast<int>(plan_.kernels.size()));
      s.kernelBuffers.push_back(std::move(buffers));
      plan_.kernels.push_back(std::move(lowered.kernels[k]));
    }
    plan_.steps.push_back(std::move(s));
    return Status::ok();
  }

  // Row-major matrices; batch dims broadcast (NumPy), each operand's batch
  // stride 0 where it broadcasts.
  Expected<GemmSpec> gemmSpec(const Node& n, int a, int b, int c) {
    const Shape &as = n.operand(0)->type().shape, &bs = n.operand(1)->type().shape, &cs = n.result()->type().shape;
    if (as.size() < 2 || bs.size() < 2)
      return Error(str("matmul with a rank-1 operand is not lowered to a GEMM step yet"));
    GemmSpec g;
    g.a = a;
    g.b = b;
    g.c = c;
    g.transA = n.attr("transpose_a").asBool();
    g.transB = n.attr("transpose_b").asBool();
    g.m = cs[cs.size() - 2];
    g.n = cs[cs.size() - 1];
    g.k = g.transA ? as[as.size() - 2] : as[as.size() - 1];
    g.batch = Shape(cs.begin(), cs.end() - 2);
    auto batchStrides = [&](const Shape& s) {
      std::vector<int64_t> strides(g.batch.size(), 0);
      int64_t stride = s[s.size() - 1] * s[s.size() - 2];
      size_t lead = g.batch.size() - (s.size() - 2);
      for (size_t d = s.size() - 2; d-- > 0;) {
        if (s[d] != 1) strides[lead + d] = stride;
        stride *= s[d];
      }
      return strides;
    };
    g.aBatchStrides = batchStrides(as);
    g.bBatchStrides = batchStrides(bs);
    g.cBatchStrides = batchStrides(cs);
    return g;
  }

  const Graph& g_;
  ValueNames names_;
  Plan plan_;
  std::map<const Value*, int> ids_;
  std::map<std::string, int> kernelNames_;
};

}  // namespace

Expected<Plan> buildPlan(const Graph& g) { return PlanBuilder(g).run(); }

}  // namespace kfuse
