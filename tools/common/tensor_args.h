// Inputs and outputs of a run on the command line, shared by `kfuse run`
// and the runtime-only `kfuse-run`: NAME=FILE arguments matched against a
// signature, and outputs summarised and written as files.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kfuse::cli {

struct NamedType {
  std::string name;
  TensorType type;
};

using TensorReader = std::function<Expected<Tensor>(const std::string& path)>;
using TensorWriter = std::function<Status(const std::string& path, const Tensor& t, const std::string& name)>;

// One tensor per entry of `signature`, from `specs` ("NAME=FILE", NAME with
// or without '%'); errors name the function, the input and the file.
Expected<std::vector<Tensor>> gatherInputs(const std::vector<NamedType>& signature, const std::string& function,
                                           const std::vector<std::string>& specs, const TensorReader& read);

// "f32[2,3]  min ..  max ..  mean ..  [first values]".
std::string summarize(const Tensor& t);

// Prints each output's summary; with `dir`, writes each as NAME.<ext> there
// (names made safe as file names, duplicates numbered).
Status reportOutputs(const std::vector<Tensor>& outputs, const std::vector<std::string>& names, const std::string& dir,
                     const std::string& ext, const TensorWriter& write);

}  // namespace kfuse::cli
