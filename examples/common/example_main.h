// The command line and the run loop shared by the C++ examples: each example
// builds its model and a sample input, and hands both to runExample.
//
//   --print-ir        print the traced IR (parameters declared, data not shown)
//   --weights FILE    load parameters from a weights file (safetensors), by name
//   --input FILE.npy  run on this input instead of the example's sample
//   --output FILE.npy write the first output
//   --save FILE.kir   write the traced module (and FILE.safetensors) for `kfuse run`
#pragma once

#include <string>

#include "frontend/trace/trace.h"

namespace kfuse::examples {

struct ExampleOptions {
  bool printIr = false;
  std::string weights, input, output, save;
};

// Parses argv into opts. Returns -1 to go on, or the exit status to end
// with (0 after --help, 2 after a bad argument, with the usage printed).
int parseExampleArgs(int argc, char** argv, const std::string& about, ExampleOptions& opts);

// Loads --weights into model, traces model.forward on the input, prints the
// IR if asked, runs the reference interpreter and prints a summary of each
// output. Returns the exit status (1 with a message on any error).
int runExample(nn::Module& model, const kfuse::Tensor& sample, const ExampleOptions& opts);

}  // namespace kfuse::examples
