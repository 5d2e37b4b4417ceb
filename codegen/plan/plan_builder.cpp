#include "codegen/plan/plan_builder.h"

#include <map>
#include <set>

#include "codegen/kernel/lower.h"
#include "codegen/plan/collective_waits.h"
#include "codegen/plan/plan_pass.h"
#include "exec/parallel.h"
#include "ir/kernel_form.h"
#include "ir/op_registry.h"
#include "ir/ops/window.h"
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
  PlanBuilder(const Graph& g, const PlanOptions& opts) : g_(g), opts_(opts), names_(g) { plan_.function = g.name(); }

  Expected<Plan> run() {
    for (size_t i = 0; i < g_.arguments().size(); ++i) {
      const Value* a = g_.argument(i);
      PlanBuffer in = buffer(names_(a), a->type(), BufferKind::Input);
      in.input = i;
      int b = add(std::move(in));
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
    placeCollectiveWaits(plan_);
    return plan_;
  }

 private:
  static PlanBuffer buffer(std::string name, const TensorType& type, BufferKind kind) {
    PlanBuffer b;
    b.name = std::move(name);
    b.type = type;
    b.kind = kind;
    return b;
  }

  int add(PlanBuffer b) {
    plan_.buffers.push_back(std::move(b));
    return static_cast<int>(plan_.buffers.size() - 1);
  }

  int bufferOf(const Value* v) {
    if (auto it = ids_.find(v); it != ids_.end()) return it->second;
    // Parameters get their buffer on first use.
    PlanBuffer b = buffer(names_(v), v->type(), BufferKind::Param);
    b.param = v->name();
    int id = add(std::move(b));
    ids_[v] = id;
    return id;
  }

  int temp(const Value* v) {
    int id = add(buffer(names_(v), v->type(), BufferKind::Temp));
    ids_[v] = id;
    return id;
  }

  std::string uniqueName(std::string base) {
    if (int n = kernelNames_[base]++; n > 0) base = str(base, "_", n);
    return base;
  }

  Status lowerNode(const Node& n) {
    if (n.is(Op::Constant)) {
      PlanBuffer b = buffer(names_(n.result()), n.result()->type(), BufferKind::Constant);
      b.constant = std::make_shared<const Tensor>(n.attr("value").asTensor());
      ids_[n.result()] = add(std::move(b));
      return Status::ok();
    }
    if (n.is(Op::AllReduce) || n.is(Op::ReduceScatter) || n.is(Op::AllGather) || n.is(Op::Shard))
      return collective(n);
    if (isView(n)) {
      PlanBuffer b = buffer(names_(n.result()), n.result()->type(), BufferKind::Alias);
      b.aliasOf = bufferOf(n.operand(0));
      ids_[n.result()] = add(std::move(b));
      return Status::ok();
    }
    if (n.body()) {
      std::vector<const Value*> args(n.operands().begin(), n.operands().end());
      return lowerGroupNode(n, *n.body(), n.body()->name(), args);
    }
    if (n.op().fusion == FusionClass::GemmLike) {
      Step s;
      s.name = uniqueName(std::string(n.opName()));
      std::vector<int> operands;
      for (const Value* v : n.operands()) operands.push_back(bufferOf(v));
      KF_RETURN_IF_ERROR(libraryCall(n, operands, temp(n.result()), s));
      plan_.steps.push_back(std::move(s));
      return Status::ok();
    }
    if (kernelFormIssue(n).empty()) {
      std::vector<const Value*> args;
      std::unique_ptr<Graph> body = singleNodeBody(n, args);
      return lowerGroupNode(n, *body, std::string(n.opName()), args);
    }
    if (n.op().scatterAxis) return scatterAdd(n);
    if (n.op().pieces) {  // copied block by block, where its attributes allow
      std::string name = uniqueName(std::string(n.opName()));
      if (auto pieces = kernel::lowerPieces(n, name); pieces && !pieces->kernels.empty()) {
        std::vector<const Value*> args(n.operands().begin(), n.operands().end());
        return emitGroup(n, std::move(*pieces), name, args, nullptr);
      }
    }
    return reference(n);
  }

  // The exchange's start; its wait is placed once every step is known
  // (placeCollectiveWaits).
  Status collective(const Node& n) {
    Step s;
    s.name = uniqueName(std::string(n.opName()));
    CollectiveSpec c;
    c.op = n.is(Op::AllReduce)       ? CollectiveOp::AllReduce
           : n.is(Op::ReduceScatter) ? CollectiveOp::ReduceScatter
           : n.is(Op::AllGather)     ? CollectiveOp::AllGather
                                     : CollectiveOp::Shard;
    c.bucket = n.is(Op::Shard) ? 0 : static_cast<int>(n.attr("bucket").asInt());
    if (c.op != CollectiveOp::AllReduce) c.ranks = n.attr("ranks").asInt();
    for (const Value* v : n.operands()) c.inputs.push_back(bufferOf(v));
    for (size_t i = 0; i < n.numResults(); ++i) c.outputs.push_back(temp(n.result(i)));
    // ZeRO-1 scatters gradients only: the whole one is a gradient in memory
    // reports, as its shard (the update's operand) is.
    if (c.op == CollectiveOp::ReduceScatter) markGradient(c.inputs[0]);
    s.body = std::move(c);
    plan_.steps.push_back(std::move(s));
    return Status::ok();
  }

  Status reference(const Node& n) {
    Step s;
    s.name = uniqueName(std::string(n.opName()));
    ReferenceOp r{&n.op(), n.attrs(), {}, {}};
    for (const Value* v : n.operands()) r.inputs.push_back(bufferOf(v));
    for (size_t i = 0; i < n.numResults(); ++i) r.outputs.push_back(temp(n.result(i)));
    if (int g = n.op().gradientOperand; g >= 0) markGradient(r.inputs[static_cast<size_t>(g)]);
    s.body = std::move(r);
    plan_.steps.push_back(std::move(s));
    return Status::ok();
  }

  // A gather's gradient: a step of zeros, then a step adding dy's rows
  // where the indices point. Two launches: a CUDA launch runs the kernels
  // of a bundle at once, and the second reads what the first wrote.
  Status scatterAdd(const Node& n) {
    KF_ASSIGN_OR_RETURN(kernel::LoweredGroup g, kernel::lowerScatterAdd(n, uniqueName(std::string(n.opName()))));
    const int out = temp(n.result());
    for (size_t k = 0; k < g.kernels.size(); ++k) {
      Step s;
      s.name = g.kernels[k].name;
      std::vector<int> buffers;
      for (const kernel::BufferRef& r : g.buffers[k])
        buffers.push_back(r.kind == kernel::BufferRef::Kind::Result ? out : bufferOf(n.operand(r.index)));
      s.kernels.push_back(static_cast<int>(plan_.kernels.size()));
      s.kernelBuffers.push_back(std::move(buffers));
      plan_.kernels.push_back(std::move(g.kernels[k]));
      plan_.steps.push_back(std::move(s));
    }
    return Status::ok();
  }

  // The node's operands and results play the body's arguments and results.
  Status lowerGroupNode(const Node& n, const Graph& body, const std::string& name,
                        const std::vector<const Value*>& args) {
    std::string kernelName = uniqueName(name);
    KF_ASSIGN_OR_RETURN(kernel::LoweredGroup lowered, kernel::lowerGroup(body, kernelName));
    return emitGroup(n, std::move(lowered), kernelName, args, &body);
  }

  // One step for a lowered group: its GEMM (if any) and its kernels, with
  // the node's operands and results as the kernels' buffers. `body`: the
  // group's body, for the gradients its optimizer updates read.
  Status emitGroup(const Node& n, kernel::LoweredGroup lowered, const std::string& kernelName,
                   const std::vector<const Value*>& args, const Graph* body) {
    std::vector<int> results;
    for (size_t i = 0; i < n.numResults(); ++i) results.push_back(temp(n.result(i)));
    Step s;
    s.name = kernelName;
    int gemmOut = -1;
    if (lowered.gemm) {
      gemmOut = lowered.gemmResult >= 0 ? results[static_cast<size_t>(lowered.gemmResult)]
                                        : add(buffer(kernelName + ".gemm", lowered.gemm->result()->type(), BufferKind::Temp));
      std::vector<int> operands;
      for (const Value* v : lowered.gemm->operands())
        for (size_t i = 0; i < body->arguments().size(); ++i)
          if (body->argument(i) == v) operands.push_back(bufferOf(args[i]));
      KF_RETURN_IF_ERROR(libraryCall(*lowered.gemm, operands, gemmOut, s));
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
    if (body) markGradients(*body, args, lowered.gemm, gemmOut);
    plan_.steps.push_back(std::move(s));
    return Status::ok();
  }

  // The buffers the group's optimizer updates read their gradients from: an
  // operand of the group, or its GEMM's result (a weight gradient whose
  // update is the GEMM's epilogue); through views. Values computed in the
  // group's kernels never reach memory.
  void markGradients(const Graph& body, const std::vector<const Value*>& args, const Node* gemm, int gemmOut) {
    for (const auto& n : body.nodeList()) {
      if (n->op().gradientOperand < 0) continue;
      const Value* v = n->operand(static_cast<size_t>(n->op().gradientOperand));
      while (v->producer() && isView(*v->producer())) v = v->producer()->operand(0);
      int b = -1;
      if (gemm && v == gemm->result()) b = gemmOut;
      for (size_t i = 0; i < body.arguments().size(); ++i)
        if (body.argument(i) == v) b = bufferOf(args[i]);
      if (b >= 0) markGradient(b);
    }
  }

  void markGradient(int b) {
    while (plan_.buffers[static_cast<size_t>(b)].kind == BufferKind::Alias) b = plan_.buffers[static_cast<size_t>(b)].aliasOf;
    PlanBuffer& storage = plan_.buffers[static_cast<size_t>(b)];
    if (storage.kind == BufferKind::Temp) storage.gradient = true;
  }

  // A matmul or convolution (forward or backward) step writing `out`.
  Status libraryCall(const Node& n, const std::vector<int>& operands, int out, Step& s) {
    if (!n.is(Op::Matmul)) {
      KF_ASSIGN_OR_RETURN(s.body, convSpec(n, operands, out));
      // One image-group's patch matrix at a time (runtime/cpu_conv.h),
      // computed in f32 for every dtype but f64, unless the target's
      // convolution reads none (PlanOptions::convWorkspace).
      const ConvSpec& c = s.conv();
      if (opts_.convWorkspace && !opts_.convWorkspace(c, n.result()->type().dtype)) return Status::ok();
      // Backward, the same patch matrix: dw multiplies dy by it; dx is
      // gathered into it from dy and scattered back (col2im). Several
      // images' at once where images have few pixels (exec/parallel.h).
      const int64_t rows = im2colWorkspaceRows(c, im2colImagesPerGemm(c)), pixels = c.oh * c.ow;
      DType dt = n.result()->type().dtype == DType::F64 ? DType::F64 : DType::F32;
      PlanBuffer ws = buffer(s.name + ".workspace", TensorType(dt, {rows, pixels}), BufferKind::Temp);
      ws.workspace = true;
      s.conv().workspace = add(std::move(ws));
      return Status::ok();
    }
    KF_ASSIGN_OR_RETURN(s.body, gemmSpec(n, operands[0], operands[1], out));
    return Status::ok();
  }

  // The geometry in the forward's terms: the image x, filter w and result
  // y are the operands and result in the direction the op computes.
  static Expected<ConvSpec> convSpec(const Node& n, const std::vector<int>& operands, int out) {
    ConvSpec c;
    const TensorType *xt = nullptr, *wt = nullptr, *yt = nullptr;
    if (n.is(Op::Conv2d)) {
      c = {.x = operands[0], .w = operands[1], .bias = operands.size() > 2 ? operands[2] : -1, .y = out};
      xt = &n.operand(0)->type(), wt = &n.operand(1)->type(), yt = &n.result()->type();
    } else if (n.is(Op::Conv2dGradInput)) {
      c = {.x = out, .w = operands[1], .y = operands[0], .direction = ConvDirection::GradInput};
      xt = &n.result()->type(), wt = &n.operand(1)->type(), yt = &n.operand(0)->type();
    } else if (n.is(Op::Conv2dGradWeight)) {
      c = {.x = operands[1], .w = out, .y = operands[0], .direction = ConvDirection::GradWeight};
      xt = &n.operand(1)->type(), wt = &n.result()->type(), yt = &n.operand(0)->type();
    } else {
      return Error(str("'", n.opName(), "' is not a convolution"));
    }
    KF_ASSIGN_OR_RETURN(ops::Image x, ops::imageOfType(*xt, "the image"));
    KF_ASSIGN_OR_RETURN(ops::Filter w, ops::filterOfType(*wt, "the filter"));
    const Shape& ys = yt->shape;
    c.n = x.n;
    c.c = x.c;
    c.h = x.h;
    c.wd = x.w;
    c.o = w.o;
    c.kh = w.kh;
    c.kw = w.kw;
    c.channelsLast = x.channelsLast;
    c.filterLast = w.channelsLast;
    c.oh = x.channelsLast ? ys[1] : ys[2];
    c.ow = x.channelsLast ? ys[2] : ys[3];
    c.groups = n.attr("groups").asInt();
    const auto &strides = n.attr("strides").asInts(), &pads = n.attr("pads").asInts(),
               &dil = n.attr("dilations").asInts();
    c.strideH = strides[0];
    c.strideW = strides[1];
    c.padTop = pads[0];
    c.padLeft = pads[1];
    c.dilH = dil[0];
    c.dilW = dil[1];
    if (n.is(Op::Conv2d)) c.liveTaps = n.attr("live_taps").asInts();
    // A pointwise NCHW convolution's planes as rows long enough to fill
    // vectors (ops::pointwiseRowsJoined): the same memory, the same sums.
    if (!c.channelsLast && c.pointwise()) {
      const int64_t k = ops::pointwiseRowsJoined(c.oh, c.ow);
      c.h = c.oh = c.oh / k;
      c.wd = c.ow = c.ow * k;
    }
    return c;
  }

  // Row-major matrices; batch dims broadcast (NumPy), each operand's batch
  // stride 0 where it broadcasts. A rank-1 `a` is a 1 x K row and a rank-1
  // `b` a K x 1 column, as in NumPy; the result's dropped unit axis leaves
  // its layout that of batch x M x N.
  Expected<GemmSpec> gemmSpec(const Node& n, int a, int b, int c) {
    Shape as = n.operand(0)->type().shape, bs = n.operand(1)->type().shape;
    const Shape& cs = n.result()->type().shape;
    bool aVector = as.size() == 1, bVector = bs.size() == 1;
    if (aVector) as.insert(as.begin(), 1);
    if (bVector) bs.push_back(1);
    GemmSpec g;
    g.a = a;
    g.b = b;
    g.c = c;
    g.transA = n.attr("transpose_a").asBool();
    g.transB = n.attr("transpose_b").asBool();
    size_t batchRank = std::max(as.size(), bs.size()) - 2;
    g.batch = Shape(cs.begin(), cs.begin() + static_cast<std::ptrdiff_t>(batchRank));
    g.m = aVector ? 1 : cs[batchRank];
    g.n = bVector ? 1 : cs.back();
    g.k = g.transA ? as[as.size() - 2] : as[as.size() - 1];
    Shape full = g.batch;
    full.push_back(g.m);
    full.push_back(g.n);
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
    g.cBatchStrides = batchStrides(full);
    foldBatchIntoRows(g);
    return g;
  }

  // A batch of row-major A's times one shared B is one GEMM with the batch
  // folded into M: A's and C's batches lie contiguously, each M rows after
  // the previous. A Linear on [batch, seq, features] was 64 GEMMs of 4 rows,
  // each packing the whole weight again.
  static void foldBatchIntoRows(GemmSpec& g) {
    if (g.transA || g.batch.empty()) return;
    for (int64_t s : g.bBatchStrides)
      if (s != 0) return;
    for (int64_t d : g.batch) g.m *= d;
    g.batch.clear();
    g.aBatchStrides.clear();
    g.bBatchStrides.clear();
    g.cBatchStrides.clear();
  }

  const Graph& g_;
  const PlanOptions& opts_;
  ValueNames names_;
  Plan plan_;
  std::map<const Value*, int> ids_;
  std::map<std::string, int> kernelNames_;
};

}  // namespace

Expected<Plan> lowerToPlan(const Graph& g, const PlanOptions& opts) { return PlanBuilder(g, opts).run(); }

Expected<Plan> buildPlan(const Graph& g, const PlanOptions& opts) {
  KF_ASSIGN_OR_RETURN(Plan plan, lowerToPlan(g, opts));
  KF_ASSIGN_OR_RETURN(auto passes, parsePlanPipeline(standardPlanPipeline(opts.inplace)));
  for (const auto& pass : passes) KF_RETURN_IF_ERROR(pass->run(plan, PassContext{}).status());
  markPackedFilters(plan, opts.packFilters);
  markPackedGemms(plan, opts.packGemms);
  return plan;
}

}  // namespace kfuse
