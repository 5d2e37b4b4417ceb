#include "codegen/plan/collective_waits.h"

#include <algorithm>
#include <set>

namespace kfuse {
namespace {

// The index of the step before which Start step `s`'s wait goes; `newState`:
// the storage of the parameters' new values (in-place rewriting, later, may
// put them in the parameters' storage).
size_t waitPosition(const Plan& p, size_t s, const std::set<int>& newState) {
  const CollectiveSpec& c = p.steps[s].collective();
  std::set<int> bucket;
  for (int b : c.outputs) bucket.insert(p.storageOf(b));
  bool holdsOutput = false;
  for (int out : p.outputs) holdsOutput = holdsOutput || bucket.count(p.storageOf(out));
  for (size_t t = s + 1; t < p.steps.size(); ++t) {
    for (int b : stepBuffers(p.steps[t]))
      if (bucket.count(p.storageOf(b))) return t;
    if (holdsOutput)
      for (int w : stepWrites(p, p.steps[t])) {
        int storage = p.storageOf(w);
        if (p.buffers[static_cast<size_t>(storage)].kind == BufferKind::Param || newState.count(storage)) return t;
      }
  }
  return p.steps.size();
}

}  // namespace

void placeCollectiveWaits(Plan& p) {
  std::set<int> newState;
  for (const auto& [param, b] : p.updates) newState.insert(p.storageOf(b));
  std::vector<std::vector<Step>> waitsBefore(p.steps.size() + 1);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& start = p.steps[s];
    if (start.kind() != StepKind::Collective || start.collective().phase != CollectivePhase::Start) continue;
    Step wait;
    wait.name = start.name + ".wait";
    wait.phase = start.phase;
    const CollectiveSpec& c = start.collective();
    wait.body = CollectiveSpec{CollectivePhase::Wait, c.bucket, {}, c.outputs, c.op, c.ranks};
    waitsBefore[waitPosition(p, s, newState)].push_back(std::move(wait));
  }
  std::vector<Step> steps;
  for (size_t t = 0; t <= p.steps.size(); ++t) {
    for (Step& w : waitsBefore[t]) steps.push_back(std::move(w));
    if (t < p.steps.size()) steps.push_back(std::move(p.steps[t]));
  }
  p.steps = std::move(steps);
}

}  // namespace kfuse
