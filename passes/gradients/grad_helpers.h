// Helpers the rules of several families share.
#pragma once

#include "passes/gradients/grad_builder.h"

namespace kfuse::ops {

// v with layout tag `layout` (same shape, no data movement).
inline Value* withLayout(GradBuilder& b, Value* v, Layout layout) { return b.withLayout(v, layout); }

}  // namespace kfuse::ops
