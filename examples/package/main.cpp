// Runs a package with the runtime library alone: kfuse compile m.kir -o m.kfpkg; example_package m.kfpkg
#include <iostream>

#include "runtime/package/package_runner.h"

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: example_package PACKAGE.kfpkg\n", 1;
  auto package = kfuse::Package::load(argv[1]);
  if (!package) return std::cerr << package.error().message() << "\n", 1;
  auto runner = kfuse::PackageRunner::create(*package);
  if (!runner) return std::cerr << runner.error().message() << "\n", 1;
  const kfuse::PackageFunction& fn = (*package)->functions().front();
  std::vector<kfuse::Tensor> inputs;  // all ones, one per input of the first function
  for (const kfuse::PackageTensor& in : fn.inputs) {
    kfuse::Tensor t(in.type);
    for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, 1.0);
    inputs.push_back(std::move(t));
  }
  auto outputs = (*runner)->run(fn.name, inputs);
  if (!outputs) return std::cerr << outputs.error().message() << "\n", 1;
  for (size_t i = 0; i < outputs->size(); ++i)
    std::cout << fn.outputs[i].name << ": " << kfuse::formatType((*outputs)[i].type()) << " first "
              << (*outputs)[i].at(0) << "\n";
}
