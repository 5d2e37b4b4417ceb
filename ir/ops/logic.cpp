// Logical and integer ops beyond the v1 set, added as frontends need them.
#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerLogicOps(OpRegistry&) {}

}  // namespace kfuse
