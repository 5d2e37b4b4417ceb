#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerPoolOps(OpRegistry&) {}

}  // namespace kfuse
