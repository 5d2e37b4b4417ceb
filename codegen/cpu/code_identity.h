// What a generated CPU function's code depends on, besides the CPU and the
// compile options: the text that names it by its code. The JIT (jit.h) and
// AOT packages (codegen/package_compiler.h) compile each distinct code once,
// however many kernels or steps run it: a transformer's layers, a ResNet
// stage's blocks, the forward kernels a training package's @main and
// @train_step share. Names are left out (the model's and the plan's), and so
// are the plan's buffer numbers in convolution and GEMM specs, which the
// code never reads: it takes its buffers as arguments.
#pragma once

#include <string>
#include <string_view>

#include "codegen/cpu/conv_emitter.h"
#include "codegen/cpu/gemm_emitter.h"
#include "exec/kernel_ir.h"

namespace kfuse::cpu {

std::string codeOf(const kernel::Kernel& k);
std::string codeOf(const DirectConv& c);
std::string codeOf(const PackedGemm& g);

// A symbol-safe name for `code`: `kind` and a hash of the code
// ("kernel_3f09...").
std::string codeName(std::string_view kind, const std::string& code);

}  // namespace kfuse::cpu
