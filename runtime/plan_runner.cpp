#include "runtime/plan_runner.h"

#include <chrono>
#include <cmath>

#include "ir/support/strings.h"

namespace kfuse {
namespace {

// Step times (RunnerOptions::profile): monotonic, unlike the system clock.
using Clock = std::chrono::steady_clock;

bool finite(const Tensor& t) {
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (!std::isfinite(t.at(i))) return false;
  return true;
}

}  // namespace

PlanRunner::PlanRunner(std::shared_ptr<const Plan> plan, RunnerOptions opts) : opts_(opts), plan_(std::move(plan)) {
  const Plan& p = *plan_;
  uploaded_.resize(p.buffers.size());
  writtenInPlace_.assign(p.buffers.size(), false);
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].inPlace) writtenInPlace_[static_cast<size_t>(p.storageOf(static_cast<int>(i)))] = true;
  residentAhead_.assign(p.buffers.size(), false);
  for (const auto& [param, value] : p.updates) {
    int found = -1;
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].kind == BufferKind::Param && p.buffers[i].param == param) found = static_cast<int>(i);
    paramBuffer_.push_back(found);
    keepable_ = keepable_ && found >= 0 &&
                p.buffers[static_cast<size_t>(found)].type == p.buffers[static_cast<size_t>(value)].type;
  }
  lastWriter_.assign(p.buffers.size(), -1);
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (int b : stepWrites(p, p.steps[s])) {
      int storage = p.storageOf(b);
      lastWriter_[static_cast<size_t>(storage)] = static_cast<int>(s);
      if (p.buffers[static_cast<size_t>(storage)].kind == BufferKind::Param && firstParamWrite_ < 0)
        firstParamWrite_ = static_cast<int>(s);
    }
  dying_.resize(p.steps.size());
  last_.resize(p.updates.size());
  spare_.resize(p.updates.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    // Inputs' resident copies are refilled every run, so they may die too.
    bool mortal = b.kind == BufferKind::Temp || b.kind == BufferKind::Input;
    if (mortal && b.lastUse >= 0 && static_cast<size_t>(b.lastUse) < p.steps.size())
      dying_[static_cast<size_t>(b.lastUse)].push_back(static_cast<int>(i));
  }
}

bool PlanRunner::canGuard(int o) const {
  const Plan& p = *plan_;
  if (o < 0 || static_cast<size_t>(o) >= p.outputs.size()) return false;
  const PlanBuffer& b = p.buffers[static_cast<size_t>(p.outputs[static_cast<size_t>(o)])];
  if (b.type.dtype != DType::F32 && b.type.dtype != DType::F64) return false;
  int written = lastWriter_[static_cast<size_t>(p.storageOf(p.outputs[static_cast<size_t>(o)]))];
  return firstParamWrite_ < 0 || written < firstParamWrite_;
}

Expected<InterpreterResult> PlanRunner::runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard,
                                                        bool& kept) {
  kept = canKeepState() && (guard < 0 || canGuard(guard));
  if (!kept) return run(m, args);
  return run(m, args, RunOptions{.keepState = true, .finiteOutput = guard});
}

Status PlanRunner::syncState(Module& m) {
  const Plan& p = *plan_;
  for (size_t u = 0; u < p.updates.size(); ++u) {
    int pb = paramBuffer_[u];
    if (pb < 0 || !residentAhead_[static_cast<size_t>(pb)]) continue;
    auto value = std::make_shared<Tensor>(p.buffers[static_cast<size_t>(pb)].type);
    KF_RETURN_IF_ERROR(download(pb, *value));
    m.setParamData(p.updates[u].first, value);
    uploaded_[static_cast<size_t>(pb)] = value;
    residentAhead_[static_cast<size_t>(pb)] = false;
  }
  return Status::ok();
}

Status PlanRunner::bucketIntoOutputs(const CollectiveSpec& c) {
  for (size_t i = 0; i < c.outputs.size(); ++i)
    if (plan_->storageOf(c.inputs[i]) != plan_->storageOf(c.outputs[i]))
      KF_RETURN_IF_ERROR(copyBuffer(c.outputs[i], c.inputs[i]));
  return Status::ok();
}

Expected<bool> PlanRunner::allFinite(int buffer) {
  Tensor t(plan_->buffers[static_cast<size_t>(buffer)].type);
  KF_RETURN_IF_ERROR(download(buffer, t));
  return finite(t);
}

Status PlanRunner::checkRun(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro) const {
  const Plan& plan = *plan_;
  if (ro.keepState && !keepable_) return Error(str("plan @", plan.function, " cannot keep its state on the device"));
  if (ro.finiteOutput >= 0 && !canGuard(ro.finiteOutput))
    return Error(str("output ", ro.finiteOutput, " of plan @", plan.function, " is written after a parameter"));
  if (args.size() != plan.inputs.size())
    return Error(str("plan @", plan.function, " takes ", plan.inputs.size(), " inputs, got ", args.size()));
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind == BufferKind::Input) {
      const Tensor& t = args[b.input];
      if (t.dtype() != b.type.dtype || t.shape() != b.type.shape)
        return Error(str("input ", b.name, " must be ", formatType(b.type), ", got ", formatType(t.type())));
    } else if (b.kind == BufferKind::Param) {
      const Param* p = m.findParam(b.param);
      if (!p || !p->data) return Error(str("parameter @", b.param, " has no data"));
      if (p->data->byteSize() != b.type.byteSize())
        return Error(str("parameter @", b.param, " holds ", formatType(p->data->type()), ", the plan expects ",
                         formatType(b.type)));
    }
  }
  return Status::ok();
}

// Inputs every run, constants once, a parameter when the device holds
// another tensor than the module's (and is not ahead of it).
Status PlanRunner::bind(const Module& m, const std::vector<Tensor>& args) {
  const Plan& plan = *plan_;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& b = plan.buffers[i];
    const int buffer = static_cast<int>(i);
    switch (b.kind) {
      case BufferKind::Input: KF_RETURN_IF_ERROR(upload(buffer, args[b.input])); break;
      case BufferKind::Param: {
        const std::shared_ptr<const Tensor>& data = m.findParam(b.param)->data;
        if (!residentAhead_[i] && uploaded_[i] != data) {
          KF_RETURN_IF_ERROR(upload(buffer, *data));
          uploaded_[i] = data;
        }
        break;
      }
      case BufferKind::Constant:
        if (!constantsUploaded_) KF_RETURN_IF_ERROR(upload(buffer, *b.constant));
        break;
      case BufferKind::Temp:
      case BufferKind::Alias: break;
    }
  }
  constantsUploaded_ = true;
  return Status::ok();
}

Expected<bool> PlanRunner::guardFails(const RunOptions& ro) {
  if (ro.finiteOutput < 0) return false;
  KF_ASSIGN_OR_RETURN(bool ok, allFinite(plan_->outputs[static_cast<size_t>(ro.finiteOutput)]));
  return !ok;
}

Expected<Tensor> PlanRunner::fetch(int buffer) {
  Tensor t(plan_->buffers[static_cast<size_t>(buffer)].type);
  KF_RETURN_IF_ERROR(download(buffer, t));
  return t;
}

Expected<InterpreterResult> PlanRunner::outputs() {
  InterpreterResult r;
  for (int out : plan_->outputs) {
    KF_ASSIGN_OR_RETURN(Tensor t, fetch(out));
    r.outputs.push_back(std::move(t));
  }
  return r;
}

// The steps one by one (the guard before the first that writes a
// parameter), or all at once where the device replays them; `stopped`
// when the guard stopped the run.
Status PlanRunner::stepAll(const RunOptions& ro, bool& stopped) {
  const Plan& plan = *plan_;
  stopped = false;
  if (ro.finiteOutput < 0) {
    KF_ASSIGN_OR_RETURN(bool replayed, runAllSteps());
    if (replayed) return Status::ok();
  }
  const bool clock = opts_.profile && !timesSteps();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (static_cast<int>(i) == firstParamWrite_) {
      KF_ASSIGN_OR_RETURN(stopped, guardFails(ro));
      if (stopped) return Status::ok();
    }
    // The step alone: poisoning after it is a debug cost, not the step's.
    Clock::time_point start = clock ? Clock::now() : Clock::time_point{};
    if (Status s = runStep(i); !s) return s.error().context(str("step ", plan.steps[i].name));
    if (clock) runTimes_[i] = std::chrono::duration<double>(Clock::now() - start).count();
    if (opts_.poison)
      for (int b : dying_[i]) KF_RETURN_IF_ERROR(poisonBuffer(b));
  }
  return Status::ok();
}

Expected<InterpreterResult> PlanRunner::run(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro) {
  KF_RETURN_IF_ERROR(checkRun(m, args, ro));
  if (!allocated_) {
    KF_RETURN_IF_ERROR(allocate());
    allocated_ = true;
  }
  KF_RETURN_IF_ERROR(beginRun());
  KF_RETURN_IF_ERROR(bind(m, args));
  if (opts_.poison) KF_RETURN_IF_ERROR(poisonArena());
  if (opts_.profile) runTimes_.assign(plan_->steps.size(), 0.0);
  bool stopped = false;
  KF_RETURN_IF_ERROR(stepAll(ro, stopped));
  KF_RETURN_IF_ERROR(finishRun());
  // Stopped by the guard: the outputs, and nothing written to a parameter;
  // not a complete run, so its times are not counted.
  if (stopped) return outputs();
  if (opts_.profile) times_.add(runTimes_);
  // When no step writes a parameter, the guard is the last thing the run
  // does, before a kept run copies its updates into them.
  if (firstParamWrite_ < 0) {
    KF_ASSIGN_OR_RETURN(bool fails, guardFails(ro));
    if (fails) return outputs();
  }
  KF_ASSIGN_OR_RETURN(InterpreterResult r, outputs());
  // Parameter storage the run overwrote holds the new value of the update
  // written there, or nothing the module has.
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (writtenInPlace_[i]) uploaded_[i] = nullptr;
  if (ro.keepState) {
    KF_RETURN_IF_ERROR(keepUpdates());
    return r;
  }
  KF_RETURN_IF_ERROR(returnUpdates(r));
  return r;
}

// Each parameter's storage gets its new value (written in place, or copied
// from where the plan computed it) and is now ahead of the module.
Status PlanRunner::keepUpdates() {
  const Plan& plan = *plan_;
  for (size_t u = 0; u < plan.updates.size(); ++u) {
    auto pb = static_cast<size_t>(paramBuffer_[u]);
    int value = plan.updates[u].second;
    if (static_cast<size_t>(plan.storageOf(value)) != pb) KF_RETURN_IF_ERROR(copyBuffer(static_cast<int>(pb), value));
    residentAhead_[pb] = true;
    uploaded_[pb] = nullptr;
  }
  return Status::ok();
}

// Each update comes back as a tensor, which the parameter's storage holds
// too (copied there on the device when the plan computed it elsewhere), so
// a caller that applies it uploads nothing next run.
Status PlanRunner::returnUpdates(InterpreterResult& r) {
  const Plan& plan = *plan_;
  for (size_t u = 0; u < plan.updates.size(); ++u) {
    const auto& [param, b] = plan.updates[u];
    std::shared_ptr<Tensor> value = updateTensor(u, plan.buffers[static_cast<size_t>(b)].type);
    KF_RETURN_IF_ERROR(download(b, *value));
    if (int pb = paramBuffer_[u]; pb >= 0) {
      residentAhead_[static_cast<size_t>(pb)] = false;
      if (plan.storageOf(b) != plan.storageOf(pb)) KF_RETURN_IF_ERROR(copyBuffer(pb, b));
      uploaded_[static_cast<size_t>(pb)] = value;
    }
    r.updates.emplace(param, std::move(value));
  }
  return Status::ok();
}

std::shared_ptr<Tensor> PlanRunner::updateTensor(size_t u, const TensorType& t) {
  // Two steps ago's value is free again once the caller has applied the
  // step in between (only this runner holds it): refilling it skips an
  // allocation and the page faults of fresh memory, per parameter per step.
  std::shared_ptr<Tensor> value = std::move(spare_[u]);
  if (!value || value.use_count() != 1 || !(value->type() == t)) value = std::make_shared<Tensor>(t);
  spare_[u] = std::move(last_[u]);
  last_[u] = value;
  return value;
}

}  // namespace kfuse
