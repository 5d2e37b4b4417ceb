// The optimizer update ops are the end of a training step: nothing is
// differentiated through them (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {

GradFamily optimizerGrads() {
  GradFamily family;
  family.notDifferentiable = {
      {"sgd_update", "optimizer update"},
      {"adam_update", "optimizer update"},
  };
  return family;
}

}  // namespace kfuse::test
