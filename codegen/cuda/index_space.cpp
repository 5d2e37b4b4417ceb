#include "codegen/cuda/index_space.h"

#include "ir/support/strings.h"

namespace kfuse::cuda {
std::vector<std::string> emitDecompose(CodeWriter& w, const Space& space, const std::string& linear,
                                       const std::string& prefix, const std::string& indexType) {
  std::vector<std::string> names(space.dims.size());
  if (space.dims.size() == 1) {
    names[0] = linear;
    return names;
  }
  // Innermost first: i_last = t % e_last, t /= e_last, ...; the outermost is what is left.
  std::string rest = linear;
  for (size_t d = space.dims.size(); d-- > 0;) {
    names[d] = str(prefix, d);
    if (d == 0) {
      w.line("const ", indexType, " ", names[d], " = ", rest, ";");
      break;
    }
    int64_t e = space.dims[d].extent;
    w.line("const ", indexType, " ", names[d], " = ", rest, " % ", e, ";");
    std::string next = str(prefix, "q", d);
    w.line("const ", indexType, " ", next, " = ", rest, " / ", e, ";");
    rest = next;
  }
  return names;
}

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
