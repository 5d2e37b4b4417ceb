#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerLinalgOps(OpRegistry&) {}

}  // namespace kfuse
