// CUDA programs as data in a package (runtime/package/package.h): a
// CudaProgram (program.h) to JSON text and back. Module images (CUBIN, PTX)
// are binary and travel as package sections of their own, not in the text:
// serializeProgram writes each module's name only, and parseProgram returns
// modules with empty images for the package to fill.
//
// The reader trusts nothing: it checks that the program has one step per
// plan step, that every argument names a buffer of `plan`, every launch a
// module of the program, every enum a known value; errors say where
// ("cuda program: step 4: launch 1: argument 3: buffer 91 out of range").
#pragma once

#include <string>
#include <string_view>

#include "runtime/cuda/program.h"
#include "exec/plan.h"

namespace kfuse::cuda {

std::string serializeProgram(const CudaProgram& p);
Expected<CudaProgram> parseProgram(std::string_view json, const Plan& plan);

}  // namespace kfuse::cuda
