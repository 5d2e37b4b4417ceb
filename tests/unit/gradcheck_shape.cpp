// Gradient-check cases of the shape ops (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {
namespace {
using F = Fill;
}  // namespace

GradFamily shapeGrads() {
  GradFamily family;
  family.notDifferentiable = {
      {"shape_of", "integer result depending only on the type"},
      {"constant", "no operands"},
  };
  return family;
}

}  // namespace kfuse::test
