#include "ir/op.h"

#include <algorithm>
#include <array>

namespace kfuse {
namespace {

constexpr std::array<std::string_view, kOpCount> kNames = {
#define KF_OP(id, name) name,
#include "ir/ops/ops.def"
#undef KF_OP
};

// ops.def is sorted by name, so a lookup is a binary search.
static_assert(std::is_sorted(kNames.begin(), kNames.end()), "ir/ops/ops.def must be sorted by name");

}  // namespace

std::string_view opName(Op op) { return kNames[static_cast<size_t>(op)]; }

std::optional<Op> findOp(std::string_view name) {
  auto it = std::lower_bound(kNames.begin(), kNames.end(), name);
  if (it == kNames.end() || *it != name) return std::nullopt;
  return static_cast<Op>(it - kNames.begin());
}

}  // namespace kfuse
