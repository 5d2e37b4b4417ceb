// kfuse compile: a model, compiled once for a target, into an AOT package
// (runtime/package/package.h) that runs without LLVM, NVRTC or the model.
//
// Inference packages hold every function of the module; training packages
// the forward and @train_step (codegen/trainer.h builds it, as `kfuse
// train` does). Each function is planned as the executors plan it; then a
// cpu package's kernels and direct convolutions are compiled in parallel
// chunks (one LLVM module and object file each) and linked into one shared
// object, a cuda package's by
// NVRTC into CUBIN and PTX.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/package/package.h"
#include "codegen/trainer.h"

namespace kfuse {

struct PackageCompileOptions {
  std::string target = "cpu";  // cpu or cuda
  bool fuse = true;
  std::string layout = "auto";
  bool inplace = true;
  // Training package: autodiff with these options (target, fuse, layout
  // above win over the copies inside).
  bool train = false;
  TrainerOptions training;
  std::string loss, optimizer;  // their names, for the package's meta
  // cpu: the CPU to compile for ("" = this machine, all its features).
  std::string cpu;
  // cuda: the architecture of the CUBIN.
  std::string arch = "sm_90";
  // cpu: keep the optimised LLVM IR in the package (kfuse inspect shows it).
  bool keepLLVMIR = false;
  // Compile threads (0: one per hardware thread).
  int threads = 0;
  // For the meta: the model's file and the command line's options.
  std::string model, commandLine;
  Instrumentation instrumentation;
  // Called as compilation units finish (from worker threads, one at a time).
  std::function<void(size_t done, size_t total, const std::string& unit)> progress;
};

struct CompiledPackage {
  // The package file, written atomically (whole or not at all), or in
  // memory. Its weights are written from the compiled model's tensors.
  Status write(const std::string& path) const;
  std::string bytes() const;
  uint64_t size() const;

  std::shared_ptr<const Module> model;              // owns the weights' data
  std::shared_ptr<const PackageContents> contents;  // what the file is made of
  std::shared_ptr<const package::ContainerWriter> file;  // the file, its sections viewing the two above
  size_t functions = 0;
  size_t kernels = 0;      // generated kernels over all plans
  size_t directConvs = 0;  // cpu: convolutions generated as direct convolutions
  size_t packedGemms = 0;  // cpu: GEMMs generated to read a packed B
  size_t units = 0;        // compilation units (LLVM modules or NVRTC programs)
  size_t shared = 0;       // cpu: functions linked to another's identical code instead of compiled
  size_t launches = 0;     // per run of every function, summed
};

Expected<CompiledPackage> compilePackage(std::unique_ptr<Module> model, const PackageCompileOptions& opts);

}  // namespace kfuse
