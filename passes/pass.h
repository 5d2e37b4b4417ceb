// A pass: a named transformation of one function that reports whether it
// changed anything. Pipelines are lists of passes (see pass_registry.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/support/expected.h"

namespace kfuse {

// Where passes report what they did: explanations a user asked for (fusion
// decisions, in-place reuse). Errors are a pass's result (PassResult).
class Diagnostics {
 public:
  void remark(std::string pass, std::string msg) { remarks_.push_back({std::move(pass), std::move(msg)}); }
  struct Remark {
    std::string pass;
    std::string message;
  };
  const std::vector<Remark>& remarks() const { return remarks_; }

 private:
  std::vector<Remark> remarks_;
};

// Whether a group of nodes (a candidate fused body) can become one launch
// on the target: "" if it can, else the reason. Supplied by the driver from
// the code generator, so passes need not depend on codegen/.
using GroupChecker = std::function<std::string(const Graph& body)>;

struct PassContext {
  // Sink for remarks; never null while a pipeline runs. The context itself
  // is read-only to passes; what they report goes here.
  Diagnostics* diag = nullptr;
  // Emit remarks (e.g. `kfuse opt --remarks`).
  bool remarks = false;
  // Fusion legality; without it the fusion pass forms no groups.
  GroupChecker canFormLaunch;
  // The driver's --layout (auto, nchw, nhwc): the mode of a `layout` pass
  // whose options do not name one. Empty: the pass's own default (auto).
  std::string layoutMode;
};

// What running a pass gives: whether it changed the IR, or why it failed
// (the message names what is wrong; the pass manager adds the pass).
using PassResult = Expected<bool>;

// A named transformation of one IR unit. Graph passes run on each function
// (Pass); plan passes on each function's lowered plan (PlanPass,
// codegen/plan/plan_pass.h). Both run under one instrumented driver
// (pass_manager.h's runInstrumented), so printing, dumping, timing,
// verification and --stop-after are the same for both.
template <typename IR>
class PassOn {
 public:
  virtual ~PassOn() = default;
  virtual std::string_view name() const = 0;
  // Transforms `ir`; returns whether anything changed.
  virtual PassResult run(IR& ir, const PassContext& ctx) = 0;
};

using Pass = PassOn<Graph>;

// Options given in a pipeline string: "fuse{exclude=matmul max-ops=8}".
using PassOptions = std::map<std::string, std::string, std::less<>>;

}  // namespace kfuse
