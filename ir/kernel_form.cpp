#include "ir/kernel_form.h"

#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse {

bool isSplatConstant(const Node& n) {
  if (!n.is(Op::Constant)) return false;
  const Tensor& t = n.attr("value").asTensor();
  for (int64_t i = 1; i < t.numElements(); ++i)
    if (t.at(i) != t.at(0)) return false;
  return t.numElements() > 0;
}

std::string kernelFormIssue(const Node& n) {
  if (n.op().affine) {
    std::vector<TensorType> types;
    auto map = n.op().affine(callOf(n, types), n.result()->type().shape);
    return map ? "" : map.error().message();
  }
  if (n.op().scalar || n.op().gatherAxis || (n.op().rowSpec && n.op().row)) return "";
  if (isSplatConstant(n)) return "";
  if (n.is(Op::Constant)) return "a constant with more than one value is kept in memory";
  return str("op '", n.opName(), "' has no kernel form");
}

}  // namespace kfuse
