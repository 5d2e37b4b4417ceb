#include "codegen/cuda/index_space.h"

#include "ir/support/strings.h"

namespace kfuse::cuda {
std::string offsetTerm(const Space& space, const std::vector<std::string>& index, size_t access) {
  std::string out;
  for (size_t d = 0; d < space.dims.size(); ++d) {
    int64_t s = space.dims[d].strides[access];
    if (s == 0) continue;
    std::string term = s == 1 ? index[d] : str(index[d], " * ", s);
    out = out.empty() ? term : str(out, " + ", term);
  }
  return out;
}

}  // namespace kfuse::cuda
