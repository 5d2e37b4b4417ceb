// Plans as data in a package (runtime/package/package.h): a plan, with its
// kernels' IR and its reference steps' attributes, to JSON text and back.
// Constant buffers' data are not in the text: they travel as tensors (the
// package's weights section), named by `constantKey`.
//
// The reader trusts nothing: every index (buffer, kernel, step, load,
// scalar node) is range-checked, every enum and op name looked up, and a
// plan that passes parsePlan is safe to hand to a runner (runtime/cpu_runner.h)
// as far as its structure goes. Errors say what is wrong and where
// ("plan @forward: step 3 (fused_add_relu): kernel buffer 7 out of range").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/weights.h"
#include "exec/plan.h"

namespace kfuse {

// The tensor name under which buffer `buffer` of plan `function` keeps its
// constant data: "const/<function>/<buffer>".
std::string constantKey(std::string_view function, int buffer);

// JSON text of `p`; appends each Constant buffer's tensor to `constants`
// under constantKey (the pointers point into `p`).
std::string serializePlan(const Plan& p, std::vector<std::pair<std::string, const Tensor*>>& constants);

// The JSON form of a GEMM's and a convolution's spec, as a plan's steps
// carry them (also what identifies generated code for them in a cache).
std::string gemmSpecJson(const GemmSpec& g);
std::string convSpecJson(const ConvSpec& c);

// Whether every non-alias buffer must have its offset: a plan to run (a
// package's) must; a `kfuse opt --dump-ir-dir` dump from before the
// plan-buffers pass has none.
enum class PlanOffsets { Required, Optional };

// Reads what serializePlan wrote; `constants` must hold every constant the
// plan names (extra tensors are ignored).
Expected<Plan> parsePlan(std::string_view json, const TensorMap& constants,
                         PlanOffsets offsets = PlanOffsets::Required);

}  // namespace kfuse
