// What the cuda target tells the rest of kfuse: whether a group of nodes can
// be one CUDA launch (the fusion pass's legality hook).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kfuse::cuda {

// "" when `body` lowers to kernels (kernel::checkGroup) whose every scalar
// expression the CUDA C emitter implements, else why not. Groups the
// emitter would refuse are never formed, so a plan built after fusion for
// this target always emits.
std::string checkGroup(const Graph& body);

}  // namespace kfuse::cuda
