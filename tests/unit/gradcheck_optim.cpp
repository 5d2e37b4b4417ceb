// Ops that only appear after autodiff has run: the optimizer updates end a
// training step, and fused nodes are made by the fusion pass, which runs on
// the finished training graph (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {

GradFamily optimizerGrads() {
  GradFamily family;
  family.notDifferentiable = {
      {"sgd_update", "optimizer update"},
      {"all_reduce", "a collective, inserted after autodiff (passes/data_parallel.cpp)"},
      {"reduce_scatter", "a collective, inserted after autodiff (passes/data_parallel.cpp)"},
      {"all_gather", "a collective, inserted after autodiff (passes/data_parallel.cpp)"},
      {"shard", "ZeRO-1's, inserted after autodiff (passes/data_parallel.cpp)"},
      {"adam_update", "optimizer update"},
      {"fused", "made by fusion, which runs after autodiff"},
  };
  return family;
}

}  // namespace kfuse::test
