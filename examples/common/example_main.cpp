#include "examples/common/example_main.h"

#include <iomanip>
#include <iostream>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/module_io.h"
#include "ir/npy.h"
#include "ir/printer.h"

namespace kfuse::examples {

namespace {

void usage(const char* program, const std::string& about) {
  std::cout << about << "\n\nusage: " << program
            << " [--print-ir] [--weights FILE.safetensors] [--input FILE.npy] [--output FILE.npy] [--save FILE.kir]\n";
}

// Shape, then the first row (or the first few values).
std::string summary(const kfuse::Tensor& t) {
  std::ostringstream os;
  os << formatType(t.type()) << "  [";
  int64_t row = t.shape().empty() ? 1 : t.shape().back();
  int64_t n = std::min<int64_t>(std::min<int64_t>(row, 8), t.numElements());
  for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << std::setprecision(5) << t.at(i);
  os << (n < row ? ", ...]" : "]");
  return os.str();
}

int fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

}  // namespace

int parseExampleArgs(int argc, char** argv, const std::string& about, ExampleOptions& opts) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string* value = arg == "--weights" ? &opts.weights
                         : arg == "--input" ? &opts.input
                         : arg == "--output" ? &opts.output
                         : arg == "--save" ? &opts.save
                                           : nullptr;
    if (arg == "--print-ir") {
      opts.printIr = true;
    } else if (arg == "--help" || arg == "-h") {
      usage(argv[0], about);
      return 0;
    } else if (value && i + 1 < argc) {
      *value = argv[++i];
    } else {
      std::cerr << "error: unknown or incomplete argument '" << arg << "'\n";
      usage(argv[0], about);
      return 2;
    }
  }
  return -1;
}

int runExample(nn::Module& model, const kfuse::Tensor& sample, const ExampleOptions& opts) {
  if (!opts.weights.empty()) {
    if (Status s = model.loadWeights(opts.weights); !s) return fail(s.message());
  }
  kfuse::Tensor input = sample;
  if (!opts.input.empty()) {
    auto read = readNpy(opts.input);
    if (!read) return fail(read.error().message());
    input = *read;
  }
  auto traced = nn::trace(model, input.type());
  if (!traced) return fail(traced.error().message());
  Module& m = **traced;
  if (opts.printIr) printModule(std::cout, m, PrintOptions{.inlineUnbackedParams = false});
  auto result = interpret(*m.functions().front(), {input});
  if (!result) return fail(result.error().message());
  std::cout << "input  " << summary(input) << "\n";
  for (const kfuse::Tensor& out : result->outputs) std::cout << "output " << summary(out) << "\n";
  if (!opts.output.empty()) {
    if (Status s = writeNpy(opts.output, result->outputs.front()); !s) return fail(s.message());
  }
  if (!opts.save.empty()) {
    if (Status s = writeModuleFile(m, opts.save); !s) return fail(s.message());
    std::cout << "saved " << opts.save << "\n";
  }
  return 0;
}

}  // namespace kfuse::examples
