// The IR inside plans as JSON, for plans in packages (plan_io.cpp): kernel
// IR (exec/kernel_ir.h), i.e. the kernels' buffers, index maps,
// reductions, globals and stores with their scalar DAG as a list of nodes,
// arguments first; tensor types as the IR spells them ("f32[256,64]",
// "f32[1,8,8,3]#nhwc"); and the attributes of reference ops ({"int": 3},
// {"floats": [0.5]}, {"tensor": {"type": .., "data": hex}}).
//
// Internal to plan_io.cpp, not part of the public API: the readers throw
// json_read::Invalid, which parsePlan turns into an Error.
//
// readKernel trusts nothing: every index (buffer, load, scalar node,
// iteration dim) is range-checked, every index map bounded and, where the
// interpreter follows it, kept inside its buffer; expressions are bounded
// in depth and unfolded size; and the result passes kernel::verifyKernel.
#pragma once

#include <cstdint>
#include <string_view>

#include "exec/kernel_ir.h"
#include "ir/attribute.h"
#include "exec/io/json_read.h"

namespace kfuse::package {

// Bounds far beyond any real plan, so that no size, offset or product of
// them overflows and no hostile file makes a runner loop for ever.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;  // per tensor
inline constexpr int64_t kMaxRegionBytes = int64_t{1} << 50;

// Fails unless `s` is a valid shape of at most kMaxTensorElements elements;
// `what` names it in the error.
void checkShape(const Shape& s, std::string_view what);

// A type as formatType writes it, its shape checked as by checkShape and its
// layout fitting its rank.
TensorType readType(const json_read::json& j);

// An attribute as {kind: value}; floats as json_read's doubles, tensors'
// data in hexadecimal.
json_read::ojson writeAttr(const Attribute& a);
Attribute readAttr(const json_read::json& j);

json_read::ojson writeKernel(const kernel::Kernel& k);
kernel::Kernel readKernel(const json_read::json& j);

}  // namespace kfuse::package
