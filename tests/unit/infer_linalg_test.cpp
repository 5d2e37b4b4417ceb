// Shape/type inference and error messages of the linalg ops.
#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

}  // namespace
}  // namespace kfuse
