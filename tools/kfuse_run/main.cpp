// kfuse-run: runs a compiled package (kfuse compile's .kfpkg) on inputs from
// .npy files. It links only the runtime library: no LLVM, no NVRTC, no
// frontends or passes, so it is what a deployment machine needs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "ir/npy.h"
#include "ir/support/strings.h"
#include "runtime/package/package_runner.h"
#include "tools/common/tensor_args.h"

#ifndef KFUSE_VERSION
#define KFUSE_VERSION "unknown"
#endif

namespace {

using namespace kfuse;

struct Args {
  std::string package, function, outputDir;
  std::vector<std::string> inputs;
  int repeat = 1;
  bool cudaGraph = false;
  int threads = 0;
};

int fail(const Error& e) {
  std::cerr << "kfuse-run: error: " << e.message() << "\n";
  return 1;
}

int run(const Args& a) {
  auto pkg = Package::load(a.package);
  if (!pkg) return fail(pkg.error());
  const PackageFunction* fn = a.function.empty() ? &(*pkg)->functions().front() : (*pkg)->function(a.function);
  if (!fn) return fail(Error(str("'", a.package, "' has no function @", a.function)));
  std::vector<cli::NamedType> sig;
  for (const PackageTensor& t : fn->inputs) sig.push_back({t.name, t.type});
  auto args = cli::gatherInputs(sig, fn->name, a.inputs, [](const std::string& p) { return readNpy(p); });
  if (!args) return fail(args.error());
  if (a.repeat < 1) return fail(Error(str("--repeat must be at least 1, got ", a.repeat)));
  PackageRunnerOptions ro;
  ro.cudaGraph = a.cudaGraph;
  ro.threads = a.threads;
  if (a.cudaGraph && (*pkg)->meta().target != "cuda")
    return fail(Error(str("--cuda-graph applies to cuda packages, not ", (*pkg)->meta().target)));
  auto runner = PackageRunner::create(*pkg, ro);
  if (!runner) return fail(runner.error());
  std::vector<double> ms;
  Expected<std::vector<Tensor>> outputs = Error("not run");
  for (int i = 0; i < a.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    outputs = (*runner)->run(fn->name, *args);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!outputs) return fail(outputs.error());
  }
  std::vector<std::string> names;
  for (const PackageTensor& t : fn->outputs) names.push_back(t.name);
  auto write = [](const std::string& p, const Tensor& t, const std::string&) { return writeNpy(p, t); };
  if (Status s = cli::reportOutputs(*outputs, names, a.outputDir, "npy", write); !s) return fail(s.error());
  std::sort(ms.begin(), ms.end());
  std::cerr << "@" << fn->name << " on " << (*pkg)->meta().target << ": " << (*runner)->launches() / ms.size()
            << " launches per run";
  if (a.repeat > 1) std::cerr << ", median " << ms[ms.size() / 2] << " ms over " << a.repeat << " runs";
  std::cerr << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kfuse-run: run a kfuse package (.kfpkg) without the compiler"};
  app.set_version_flag("--version", std::string("kfuse-run ") + KFUSE_VERSION);
  Args a;
  app.add_option("package", a.package, "The package (kfuse compile -o ...)")->required();
  app.add_option("--function", a.function, "Function to run (default: the first)");
  app.add_option("--input", a.inputs, "NAME=FILE.npy for each input of the function");
  app.add_option("--output-dir", a.outputDir, "Write each output as NAME.npy into DIR");
  app.add_option("--repeat", a.repeat, "Run N times and print the median time (outputs of the last run)");
  app.add_flag("--cuda-graph", a.cudaGraph, "cuda packages: capture each run as a CUDA Graph and replay it");
  app.add_option("--threads", a.threads,
                 "cpu packages: threads each step may use (default: one per CPU this process may run on)")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    return run(a);
  } catch (const std::bad_alloc&) {
    std::cerr << "kfuse-run: error: out of memory\n";
  }
  return 1;
}
