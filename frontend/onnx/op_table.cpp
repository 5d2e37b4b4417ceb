#include "frontend/onnx/op_table.h"

#include <algorithm>

#include "ir/support/strings.h"
#include "frontend/onnx/schema_table.h"

namespace kfuse::onnx_import {

std::vector<const OpLowering*> allLowerings() {
  static const std::vector<const OpLowering*> all = [] {
    std::vector<const OpLowering*> v;
    for (auto table : {attentionLowerings(), constantLowerings(), convTransposeLowerings(), einsumLowerings(),
                       elementwiseLowerings(), compositeMathLowerings(), gatherLowerings(), lossLowerings(),
                       mathLowerings(), nnLowerings(), normLowerings(), numericLowerings(), resizeLowerings(),
                       scatterLowerings(), shapeLowerings()})
      for (const OpLowering& l : table) v.push_back(&l);
    std::sort(v.begin(), v.end(), [](const OpLowering* a, const OpLowering* b) { return a->opType < b->opType; });
    return v;
  }();
  return all;
}

OpResolution resolveOp(const std::string& domain, const std::string& opType, int64_t opset) {
  OpResolution r;
  if (!domain.empty() && domain != "ai.onnx") {
    r.reason = str("ops of domain '", domain, "' are not supported");
    return r;
  }
  const OpSchemaInfo* schema = findSchema(opType, opset);
  if (!schema) {
    r.reason = firstVersion(opType) ? str("'", opType, "' is not an ONNX op at opset ", opset)
                                    : str("'", opType, "' is not an ONNX op");
    return r;
  }
  r.version = schema->sinceVersion;
  std::vector<int> known;
  for (const OpLowering* l : allLowerings()) {
    if (l->opType != opType) continue;
    if (std::find(l->versions.begin(), l->versions.end(), r.version) != l->versions.end()) {
      r.lowering = l;
      return r;
    }
    known.insert(known.end(), l->versions.begin(), l->versions.end());
  }
  r.reason = known.empty() ? str("kfuse has no lowering for ", opType)
                           : str("kfuse lowers ", opType, " versions ", join(known), ", not version ", r.version);
  return r;
}

}  // namespace kfuse::onnx_import
