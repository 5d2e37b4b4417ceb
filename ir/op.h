// Ops as handles rather than strings: one enumerator per op of the registry,
// generated from ir/ops/ops.def. Code that asks what a node is compares
// handles (n.is(Op::Conv2d)) and builds nodes by handle (b.op(Op::Mul, ...));
// op names remain the textual IR's, read by the parser and the frontends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kfuse {

enum class Op : uint16_t {
#define KF_OP(id, name) id,
#include "ir/ops/ops.def"
#undef KF_OP
};

inline constexpr size_t kOpCount = 0
#define KF_OP(id, name) +1
#include "ir/ops/ops.def"
#undef KF_OP
    ;

// The op's registry name ("conv2d").
std::string_view opName(Op op);
// The handle of the op named `name`, or nullopt.
std::optional<Op> findOp(std::string_view name);

}  // namespace kfuse
