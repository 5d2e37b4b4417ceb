#include "codegen/cuda/target.h"

#include "codegen/cuda/scalar_emitter.h"
#include "codegen/kernel/lower.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {

std::string checkGroup(const Graph& body) {
  auto group = kernel::lowerGroup(body, body.name());
  if (!group) return group.error().message();
  for (const kernel::Kernel& k : group->kernels) {
    auto check = [&](const ScalarRef& e) { return checkEmittable(*e); };
    for (const auto& l : k.loads)
      if (l.gathered)
        if (Status s = check(l.gathered->index); !s) return str("CUDA C: ", s.message());
    for (const auto& r : k.reductions)
      if (Status s = check(r.value); !s) return str("CUDA C: ", s.message());
    for (const auto& g : k.prologue)
      if (Status s = check(g.value); !s) return str("CUDA C: ", s.message());
    for (const auto& g : k.globals)
      if (Status s = check(g.value); !s) return str("CUDA C: ", s.message());
    for (const auto& st : k.stores) {
      if (Status s = check(st.value); !s) return str("CUDA C: ", s.message());
      if (st.gathered)
        if (Status s = check(st.gathered->index); !s) return str("CUDA C: ", s.message());
    }
  }
  return "";
}

}  // namespace kfuse::cuda
