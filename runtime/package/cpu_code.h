// A cpu package's kernels as callable code: its shared object loaded from
// memory (a memfd, so nothing is written to disk and nothing is left behind),
// after checking that this machine can run what it was compiled for.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/support/expected.h"
#include "runtime/cpu_runner.h"

namespace kfuse {

// Whether this process's CPU runs code compiled for `triple` with
// `features` (LLVM's names, as the package's meta lists them). Errors name
// what is missing: "compiled for x86_64 with avx512f, which this CPU lacks".
Status checkHostRuns(std::string_view triple, const std::vector<std::string>& features);

// The feature half of checkHostRuns with the CPU's answer given: `has`
// returns nullopt for features it does not know (those are not checked).
Status checkFeatures(const std::vector<std::string>& features,
                     const std::function<std::optional<bool>(std::string_view)>& has);

class CpuCode {
 public:
  // `what` names the package in messages.
  static Expected<std::unique_ptr<CpuCode>> load(std::string_view sharedObject, const std::string& what);
  ~CpuCode();
  CpuCode(const CpuCode&) = delete;
  CpuCode& operator=(const CpuCode&) = delete;

  Expected<KernelFn> function(const std::string& symbol) const;

 private:
  CpuCode() = default;
  void* handle_ = nullptr;
  int fd_ = -1;
  std::string what_;
};

}  // namespace kfuse
