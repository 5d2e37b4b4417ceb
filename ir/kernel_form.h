// Whether a node can take part in a generated kernel, judged from the
// registry alone: shared by the fusion pass (which groups) and the lowering
// to kernel IR (which builds).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kfuse {

// A constant whose elements are all equal (folded into expressions).
bool isSplatConstant(const Node& n);

// "" when `n` can be part of a kernel: elementwise ops with a scalar
// expression, data movement with an affine index map for this call,
// gathers, row ops (RowSpec), splat constants. Otherwise why not.
std::string kernelFormIssue(const Node& n);

}  // namespace kfuse
