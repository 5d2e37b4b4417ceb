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

namespace kfuse {

// Where passes report what they did and what went wrong. Remarks are
// explanations a user asked for (fusion decisions, in-place reuse); errors
// make the pipeline fail after the pass returns.
class Diagnostics {
 public:
  void error(std::string msg) { errors_.push_back(std::move(msg)); }
  void remark(std::string pass, std::string msg) { remarks_.push_back({std::move(pass), std::move(msg)}); }
  bool failed() const { return !errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  struct Remark {
    std::string pass;
    std::string message;
  };
  const std::vector<Remark>& remarks() const { return remarks_; }
  void clearErrors() { errors_.clear(); }

 private:
  std::vector<std::string> errors_;
  std::vector<Remark> remarks_;
};

// Whether a group of nodes (a candidate fused body) can become one launch
// on the target: "" if it can, else the reason. Supplied by the driver from
// the code generator, so passes need not depend on codegen/.
using GroupChecker = std::function<std::string(const Graph& body)>;

struct PassContext {
  // Sink for errors and remarks; never null while a pipeline runs. The
  // context itself is read-only to passes; what they report goes here.
  Diagnostics* diag = nullptr;
  // Emit remarks (e.g. `kfuse opt --remarks`).
  bool remarks = false;
  // Fusion legality; without it the fusion pass forms no groups.
  GroupChecker canFormLaunch;
  // The driver's --layout (auto, nchw, nhwc): the mode of a `layout` pass
  // whose options do not name one. Empty: the pass's own default (auto).
  std::string layoutMode;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Transforms `g`; returns whether anything changed.
  virtual bool run(Graph& g, const PassContext& ctx) = 0;
};

// Options given in a pipeline string: "fuse{exclude=matmul max-ops=8}".
using PassOptions = std::map<std::string, std::string, std::less<>>;

}  // namespace kfuse
