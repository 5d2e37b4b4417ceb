#include "passes/pass_registry.h"

#include "ir/support/strings.h"

namespace kfuse {

Error unknownPassOption(std::string_view pass, const PassOptions& opts) {
  return Error(str("pass '", pass, "' has no option '", opts.begin()->first, "'"));
}

namespace {
// A pass that takes no options.
PassInfo simple(std::string name, std::string summary, std::unique_ptr<Pass> (*make)()) {
  std::string n = name;
  return {std::move(name), std::move(summary),
          [n, make](const PassOptions& o) -> Expected<std::unique_ptr<Pass>> {
            if (!o.empty()) return unknownPassOption(n, o);
            return make();
          }};
}
}  // namespace

const std::vector<PassInfo>& allPasses() {
  static const std::vector<PassInfo> passes = {
      {"autodiff", "turns forward functions into training steps: loss, backward, optimizer update",
       [](const PassOptions& o) { return createAutodiffPass(o); }},
      simple("canonicalize", "algebraic simplifications: x*1, x+0, double transpose, reshape of reshape, ...",
             createCanonicalizePass),
      simple("constant-fold", "evaluates nodes whose operands are all constants (shape subgraphs included)",
             createConstantFoldPass),
      {"conv-phases",
       "strided convolutions as stride-1 convolutions over their input's phases (space-to-depth), where the cpu "
       "target's rules say it pays; fixed filters only (options: first-layers=true|false: whether layers over few "
       "channels are taken; strided-packed=true|false: whether layers a packed filter runs strided stay)",
       createConvPhasesPass},
      simple("cse", "merges nodes computing the same op on the same operands", createCSEPass),
      {"data-parallel",
       "all-reduces (mean over the ranks) of a training step's gradients in buckets, its loss and its buffer "
       "updates (options: bucket-mb=25, zero-ranks=N: ZeRO-1, optimizer state sharded over N ranks)",
       [](const PassOptions& o) { return createDataParallelPass(o); }},
      simple("dce", "removes nodes whose results are unused", createDCEPass),
      {"fuse", "groups nodes into fused nodes, each one launch (options: exclude=op1,op2)", createFusePass},
      {"layout",
       "chooses NCHW or NHWC per image region (and OIHW/OHWI filters) and moves the transposes to the regions' "
       "edges (options: mode=auto|nchw|nhwc target=cpu)",
       createLayoutPass},
      simple("pool-expand",
             "max_pool2d, avg_pool2d and their gradients of NCHW images as strided slices of their padded inputs, "
             "elementwise math and interleave: generated kernels instead of reference steps",
             createPoolExpandPass),
  };
  return passes;
}

const PassInfo* findPass(std::string_view name) {
  for (const PassInfo& p : allPasses())
    if (p.name == name) return &p;
  return nullptr;
}

Expected<std::vector<std::unique_ptr<Pass>>> parsePipeline(std::string_view text) {
  std::vector<std::unique_ptr<Pass>> out;
  size_t i = 0;
  auto known = [] {
    std::vector<std::string> names;
    for (const PassInfo& p : allPasses()) names.push_back(p.name);
    return join(names);
  };
  while (i < text.size()) {
    size_t end = i;
    while (end < text.size() && text[end] != ',' && text[end] != '{') ++end;
    std::string name(text.substr(i, end - i));
    PassOptions opts;
    if (end < text.size() && text[end] == '{') {
      size_t close = text.find('}', end);
      if (close == std::string_view::npos) return Error(str("pipeline: unclosed '{' after pass '", name, "'"));
      std::string body(text.substr(end + 1, close - end - 1));
      size_t p = 0;
      while (p < body.size()) {
        while (p < body.size() && body[p] == ' ') ++p;
        if (p >= body.size()) break;
        size_t q = body.find(' ', p);
        if (q == std::string::npos) q = body.size();
        std::string kv = body.substr(p, q - p);
        size_t eq = kv.find('=');
        if (eq == std::string::npos) opts[kv] = "true";
        else opts[kv.substr(0, eq)] = kv.substr(eq + 1);
        p = q;
      }
      end = close + 1;
    }
    if (name.empty()) return Error(str("pipeline '", text, "': empty pass name"));
    const PassInfo* info = findPass(name);
    if (!info) return Error(str("unknown pass '", name, "' (known passes: ", known(), ")"));
    KF_ASSIGN_OR_RETURN(auto pass, info->create(opts));
    out.push_back(std::move(pass));
    if (end < text.size() && text[end] == ',') ++end;
    else if (end < text.size()) return Error(str("pipeline '", text, "': expected ',' after pass '", name, "'"));
    i = end;
  }
  return out;
}

}  // namespace kfuse
