// AOT packages: what `kfuse compile` writes and the runtime loads without
// LLVM, NVRTC or the model's source. One file (container.h) with sections:
//
//   meta            JSON: format and kfuse versions, target (cpu: triple, CPU
//                   and features; cuda: architecture), how it was compiled,
//                   parameters, functions with their signatures, training
//   weights         safetensors: every parameter (optimizer state included)
//                   and every plan's constants
//   plan.N          function N's plan as JSON (plan_io.h), kernel IR included
//   cpu.so          cpu: one shared object defining every kernel of every
//                   plan, named by kernelSymbol()
//   cpu.ll          cpu, optional: the optimised LLVM IR of those kernels
//   cuda.program.N  cuda: function N's CudaProgram (runtime/cuda/program_io.h)
//   cuda.cubin.N.M / cuda.ptx.N.M: its module M's images
//   cuda.source.N   cuda: the CUDA C NVRTC compiled
//
// Package::load checks everything it can without running anything:
// container checksums, the format version, that every section parses, that
// plans only name buffers, parameters and kernels that exist. Whether the
// code fits this machine (CPU features, a GPU) is checked when a runner is
// created (package_runner.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"
#include "ir/weights.h"
#include "runtime/cuda/program.h"
#include "runtime/package/container.h"
#include "exec/plan.h"

namespace kfuse {

struct PackageTensor {
  std::string name;
  TensorType type;
};

struct PackageFunction {
  std::string name;
  // The signature as written in the model (before any pass renamed values).
  std::vector<PackageTensor> inputs, outputs;
  std::shared_ptr<const Plan> plan;
  // cuda packages: what the GPU runs (module images filled in).
  std::optional<cuda::CudaProgram> cuda;
  // cuda: the CUDA C source of its modules (for kfuse inspect).
  std::string source;
  // cpu: the Conv steps compiled as direct convolutions (symbol
  // stepSymbol(function, step)); the others run im2col + GEMM. Packages
  // written before direct convolutions existed list none.
  std::vector<size_t> directConvs;
  // cpu: the Gemm steps compiled as packed GEMMs (stepSymbol(function,
  // step); exec/packed_gemm.h), which the runner runs with B packed
  // once; the others call BLAS.
  std::vector<size_t> packedGemms;
  // cpu: those of packedGemms whose code runs the step's epilogue too
  // (exec/packed_gemm.h's packedEpilogue when the package was compiled;
  // the loader refuses a package whose plan now says otherwise).
  std::vector<size_t> packedEpilogues;
  // cpu: those of directConvs whose code runs the step's epilogue too
  // (exec/conv_epilogue.h's convEpilogue when the package was compiled;
  // the loader refuses a package whose plan now says otherwise).
  std::vector<size_t> convEpilogues;
  // cpu: those of directConvs whose code reads the filter packed
  // (exec/packed_filter.h's packedFilterFits when the package was
  // compiled; the loader refuses a package whose plan now says otherwise).
  std::vector<size_t> packedFilters;
};

// How @train_step is called: inputs of the forward, then labels (unless the
// loss is none), the learning rate (f32 scalar) and the step number (i64
// scalar, from 1); output 0 is the loss.
struct PackageTraining {
  std::string step = "train_step";
  std::string forward;  // the evaluation function
  std::string loss, optimizer;
  bool labels = true;
};

struct PackageParam {
  std::string name;
  TensorType type;
  bool trainable = true;
};

struct PackageMeta {
  uint32_t formatVersion = package::kFormatVersion;
  std::string kfuseVersion;
  std::string target;  // cpu or cuda
  // cpu: the machine the kernels were compiled for.
  std::string cpuTriple, cpuName;
  std::vector<std::string> cpuFeatures;  // enabled LLVM features ("avx2", "fma", ...)
  // cuda: the CUBIN architecture ("sm_90").
  std::string cudaArch;
  std::string model;     // the file compiled
  std::string pipeline;  // the passes that ran
  std::string options;   // compile options as given on the command line
  std::vector<PackageParam> params;
  std::optional<PackageTraining> training;
};

// The name kernel `kernel` of function `function` is compiled under
// ("f0_k3"), and its symbol in cpu.so: the LLVM emitter's symbolName of it
// (codegen/cpu/llvm_emitter.h), "kfuse_f0_k3".
std::string packageKernelName(size_t function, size_t kernel);
std::string kernelSymbol(size_t function, size_t kernel);
// The same for the generated code of step `step` ("f0_s3"): a direct
// convolution or a packed GEMM.
std::string packageStepName(size_t function, size_t step);
std::string stepSymbol(size_t function, size_t step);

// Section names.
std::string planSection(size_t function);
std::string cudaProgramSection(size_t function);
std::string cudaImageSection(size_t function, size_t module, bool ptx);
std::string cudaSourceSection(size_t function);

// Builds the package file from its parts (the compiler's side).
struct PackageContents {
  PackageMeta meta;
  std::vector<PackageFunction> functions;
  std::vector<std::pair<std::string, const Tensor*>> params;  // data, by name
  std::string cpuSharedObject;  // cpu
  std::string cpuLLVMIR;        // cpu, optional
};
// The package file, written from `c`'s parts where they lie: `c` and the
// tensors it points to outlive the writer.
package::ContainerWriter packageWriter(const PackageContents& c);
// The whole file in memory.
std::string writePackage(const PackageContents& c);

class Package {
 public:
  // Errors start with the path and say what is wrong.
  static Expected<std::shared_ptr<const Package>> load(const std::string& path);
  // The same from bytes already in memory (`name` is used in messages).
  static Expected<std::shared_ptr<const Package>> parse(std::string bytes, const std::string& name);

  const std::string& name() const { return name_; }
  const PackageMeta& meta() const { return meta_; }
  const std::vector<PackageFunction>& functions() const { return functions_; }
  const PackageFunction* function(std::string_view name) const;
  // Parameter data, by name (constants are inside the plans).
  const TensorMap& weights() const { return weights_; }
  // cpu: the kernels' shared object, and their LLVM IR when kept.
  std::string_view cpuSharedObject() const { return cpuSo_; }
  std::string_view cpuLLVMIR() const { return cpuLL_; }
  // Every section with its size, in file order (kfuse inspect).
  std::vector<std::pair<std::string, size_t>> sections() const;
  size_t fileBytes() const { return bytes_.size(); }

 private:
  Package() = default;
  Status read();

  std::string name_;
  std::string bytes_;
  package::Container container_;
  PackageMeta meta_;
  std::vector<PackageFunction> functions_;
  TensorMap weights_;
  std::string_view cpuSo_, cpuLL_;
};

}  // namespace kfuse
