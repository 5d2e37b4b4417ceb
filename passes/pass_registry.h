// The named passes and pipeline strings ("canonicalize,cse,dce").
#pragma once

#include <functional>

#include "passes/pass.h"

namespace kfuse {

struct PassInfo {
  std::string name;
  std::string summary;
  // Builds the pass from its options; an Error names an unknown option.
  std::function<Expected<std::unique_ptr<Pass>>(const PassOptions&)> create;
};

const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(std::string_view name);

// Parses "a,b{k=v k2=v2},c" into passes; unknown names are errors that list
// the known passes.
Expected<std::vector<std::unique_ptr<Pass>>> parsePipeline(std::string_view text);

// Error for an option a pass does not take.
Error unknownPassOption(std::string_view pass, const PassOptions& opts);

// The passes, each defined in its own file.
std::unique_ptr<Pass> createDCEPass();
std::unique_ptr<Pass> createCSEPass();
std::unique_ptr<Pass> createConstantFoldPass();
std::unique_ptr<Pass> createCanonicalizePass();
std::unique_ptr<Pass> createPoolExpandPass();
Expected<std::unique_ptr<Pass>> createConvPhasesPass(const PassOptions& options);
Expected<std::unique_ptr<Pass>> createAutodiffPass(const PassOptions& options);
// The autodiff pass with options given as a struct (training.h), applied to
// function `func` only (every function when empty).
std::unique_ptr<Pass> createAutodiffPass(const struct TrainingOptions& opts, std::string func);
Expected<std::unique_ptr<Pass>> createFusePass(const PassOptions& options);
// data-parallel{bucket-mb=N}: all-reduces of a training step's gradients,
// loss and buffer updates over the ranks (passes/data_parallel.cpp).
Expected<std::unique_ptr<Pass>> createDataParallelPass(const PassOptions& options);
// zeroRanks > 0: ZeRO-1, optimizer state sharded over that many ranks.
std::unique_ptr<Pass> createDataParallelPass(uint64_t bucketBytes, int64_t zeroRanks = 0);
Expected<std::unique_ptr<Pass>> createLayoutPass(const PassOptions& options);

}  // namespace kfuse
