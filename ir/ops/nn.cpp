#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerNNOps(OpRegistry&) {}

}  // namespace kfuse
