// The C++ tracing frontend in one include: traced Tensors, trace() and the
// builder (tracer.h), one function per op (ops.h), and the nn modules.
// docs/tracing.md is the guide.
#pragma once

#include "frontend/trace/nn/nn.h"
#include "frontend/trace/ops.h"
#include "frontend/trace/tracer.h"
