// Simulated modules: what the simulator's "CUBIN" is. The CUDA C of a
// compilation unit compiled as host C++ into a shared object
// (codegen/cuda/host_compiler.h), wrapped in a small header so that
// cuModuleLoadData, which gets a pointer and no size, can tell a simulator
// image from a real CUBIN and knows its length:
//
//   "KFSIMSO1" | u64 little-endian length | the ELF shared object
//
// Loading writes the object to a temporary file, dlopens it and removes
// the file; the module's entries come from its one exported function (abi.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/support/expected.h"
#include "runtime/cuda/sim/abi.h"

namespace kfuse::cuda::sim {

std::string wrapModuleImage(std::string_view sharedObject);
// Whether `image` starts with the simulator's magic (it may be anything,
// e.g. a real CUBIN, so only 8 bytes are read).
bool isModuleImage(const void* image);

class Module {
 public:
  // Loads an image (wrapModuleImage's output) and hands it the simulator's API.
  static Expected<std::unique_ptr<Module>> load(const void* image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // nullptr when the module has no entry of that name.
  const kfsim_entry* entry(std::string_view name) const;
  // What the module computes ("step fused_add (@fused_add)").
  const std::string& name() const { return name_; }

 private:
  Module() = default;
  void* handle_ = nullptr;
  std::string name_;
  std::vector<const kfsim_entry*> entries_;
};

}  // namespace kfuse::cuda::sim
