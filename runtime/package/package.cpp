#include "runtime/package/package.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include <set>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "exec/io/json_read.h"
#include "exec/io/kernel_io.h"
#include "exec/io/plan_io.h"

#if KFUSE_PACKAGE_CUDA
#include "runtime/cuda/program_io.h"
#endif
#include "exec/conv_epilogue.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"

namespace kfuse {

using namespace package::json_read;

std::string packageKernelName(size_t function, size_t kernel) { return str("f", function, "_k", kernel); }
std::string kernelSymbol(size_t function, size_t kernel) { return "kfuse_" + packageKernelName(function, kernel); }
std::string packageStepName(size_t function, size_t step) { return str("f", function, "_s", step); }
std::string stepSymbol(size_t function, size_t step) { return "kfuse_" + packageStepName(function, step); }
std::string planSection(size_t function) { return str("plan.", function); }
std::string cudaProgramSection(size_t function) { return str("cuda.program.", function); }
std::string cudaImageSection(size_t function, size_t module, bool ptx) {
  return str(ptx ? "cuda.ptx." : "cuda.cubin.", function, ".", module);
}
std::string cudaSourceSection(size_t function) { return str("cuda.source.", function); }

namespace {

constexpr const char* kMeta = "meta";
constexpr const char* kWeights = "weights";
constexpr const char* kCpuSo = "cpu.so";
constexpr const char* kCpuLL = "cpu.ll";
// More functions than a package holds (a forward and a training step);
// bounds what a reader allocates from a corrupted count.
constexpr size_t kMaxFunctions = 64;
// Step indices are checked against the plan once it is read.
constexpr int64_t kMaxSteps = int64_t{1} << 31;

// Types as the IR spells them ("f32[256,2]"), read back by kernel_io's
// checked reader.
json tensorsJson(const std::vector<PackageTensor>& ts) {
  json out = json::array();
  for (const PackageTensor& t : ts) out.push_back({{"name", t.name}, {"type", formatType(t.type)}});
  return out;
}

std::vector<PackageTensor> readTensors(const json& j) {
  std::vector<PackageTensor> out;
  for (const json& e : arrayOf(j, "a signature"))
    out.push_back({stringAt(e, "name"), within(stringAt(e, "name"), [&] { return package::readType(at(e, "type")); })});
  return out;
}

json metaJson(const PackageMeta& m, const std::vector<PackageFunction>& fns) {
  json j = {{"format", m.formatVersion}, {"kfuse_version", m.kfuseVersion}, {"target", m.target},
            {"model", m.model}, {"pipeline", m.pipeline}, {"options", m.options}};
  if (m.target == "cpu") j["cpu"] = {{"triple", m.cpuTriple}, {"name", m.cpuName}, {"features", m.cpuFeatures}};
  if (m.target == "cuda") j["cuda"] = {{"arch", m.cudaArch}};
  json params = json::array();
  for (const PackageParam& p : m.params)
    params.push_back({{"name", p.name}, {"type", formatType(p.type)}, {"trainable", p.trainable}});
  j["params"] = params;
  json functions = json::array();
  for (const PackageFunction& f : fns) {
    json fn = {{"name", f.name}, {"inputs", tensorsJson(f.inputs)}, {"outputs", tensorsJson(f.outputs)}};
    if (m.target == "cpu") {
      fn["direct_convs"] = f.directConvs;
      fn["packed_gemms"] = f.packedGemms;
      fn["packed_epilogues"] = f.packedEpilogues;
      fn["conv_epilogues"] = f.convEpilogues;
      fn["packed_filters"] = f.packedFilters;
    }
    functions.push_back(std::move(fn));
  }
  j["functions"] = functions;
  if (m.training)
    j["training"] = {{"step", m.training->step}, {"forward", m.training->forward}, {"loss", m.training->loss},
                     {"optimizer", m.training->optimizer}, {"labels", m.training->labels}};
  return j;
}

}  // namespace

package::ContainerWriter packageWriter(const PackageContents& c) {
  package::ContainerWriter w;
  w.add(kMeta, metaJson(c.meta, c.functions).dump(1));
  std::vector<std::pair<std::string, const Tensor*>> tensors = c.params;
  std::vector<std::string> plans;
  for (const PackageFunction& f : c.functions) plans.push_back(serializePlan(*f.plan, tensors));
  // The weights' data from where it lies (parameters, plans' constants):
  // assembled in memory first, a ResNet-50's 100 MB were copied twice more,
  // a seventh of its compile time.
  std::vector<std::string_view> weights = {w.keep(weightsHeader(tensors))};
  for (const auto& [_, t] : tensors) weights.emplace_back(reinterpret_cast<const char*>(t->data()), t->byteSize());
  w.addPieces(kWeights, std::move(weights));
  for (size_t i = 0; i < plans.size(); ++i) w.add(planSection(i), std::move(plans[i]));
  if (c.meta.target == "cpu") {
    w.addPieces(kCpuSo, {c.cpuSharedObject});
    if (!c.cpuLLVMIR.empty()) w.addPieces(kCpuLL, {c.cpuLLVMIR});
  }
#if KFUSE_PACKAGE_CUDA
  for (size_t i = 0; i < c.functions.size(); ++i) {
    const PackageFunction& f = c.functions[i];
    if (!f.cuda) continue;
    w.add(cudaProgramSection(i), cuda::serializeProgram(*f.cuda));
    for (size_t m = 0; m < f.cuda->modules.size(); ++m) {
      w.add(cudaImageSection(i, m, false), f.cuda->modules[m].cubin);
      w.add(cudaImageSection(i, m, true), f.cuda->modules[m].ptx);
    }
    w.add(cudaSourceSection(i), f.source);
  }
#endif
  return w;
}

std::string writePackage(const PackageContents& c) { return packageWriter(c).finish(); }

Expected<std::shared_ptr<const Package>> Package::load(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  return parse(std::move(bytes), path);
}

Expected<std::shared_ptr<const Package>> Package::parse(std::string bytes, const std::string& name) {
  std::shared_ptr<Package> p(new Package());
  p->name_ = name;
  p->bytes_ = std::move(bytes);
  KF_RETURN_IF_ERROR(p->read());
  return std::shared_ptr<const Package>(std::move(p));
}

const PackageFunction* Package::function(std::string_view name) const {
  for (const PackageFunction& f : functions_)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::pair<std::string, size_t>> Package::sections() const {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& [n, bytes] : container_.sections) out.emplace_back(n, bytes.size());
  return out;
}

namespace {

// The meta and the functions' signatures (their plans are sections of their own).
struct MetaSection {
  PackageMeta meta;
  std::vector<PackageFunction> functions;
};

// Whether a step's code was compiled to run its epilogue (the meta lists
// it) exactly where this kfuse's rule (`runsInside`) says: the code's
// arguments depend on it, and the runner passes those the rule gives.
Status epilogueAgrees(const PackageFunction& f, size_t step, const std::vector<size_t>& listed, bool runsInside,
                      const char* what, const char* after, const char* hint) {
  const bool inside = std::find(listed.begin(), listed.end(), step) != listed.end();
  if (inside == runsInside) return Status::ok();
  return Error(str("function @", f.name, ": the ", what, " at step ", step, " was compiled ", inside ? "with" : "without",
                   " its epilogue, and this kfuse would run it ", inside ? after : str("inside", hint)));
}

// What a package's list of steps compiled over a packed operand is called
// in its errors: "convolution", "its filter", "filter", "packed filters",
// "exec/packed_filter.h".
struct PackedOperand {
  std::string_view step, operand, noun, list, rule;
};

// Whether the package lists as compiled over a packed operand exactly the
// steps its plan marks so (`marked`), where the rule allows one (`fits`):
// the runner passes the operand the plan says.
Status packedStepsAgree(const PackageFunction& f, std::vector<size_t> listed,
                        const std::function<bool(const Step&)>& marked,
                        const std::function<bool(const Plan&, size_t)>& fits, const PackedOperand& w) {
  std::sort(listed.begin(), listed.end());
  std::vector<size_t> marks;
  for (size_t s = 0; s < f.plan->steps.size(); ++s)
    if (marked(f.plan->steps[s])) marks.push_back(s);
  for (size_t s : listed)
    if (!fits(*f.plan, s)) {
      const bool isMarked = std::binary_search(marks.begin(), marks.end(), s);
      const std::string why = isMarked ? str("allows no packed ", w.noun, " there (", w.rule, ")") : "does not say so";
      return Error(str("function @", f.name, ": the ", w.step, " at step ", s, " was compiled to read ", w.operand,
                       " packed, and its plan ", why));
    }
  for (size_t s : marks)
    if (!std::binary_search(listed.begin(), listed.end(), s))
      return Error(str("function @", f.name, ": the plan marks the ", w.step, " at step ", s, " to read ", w.operand,
                       " packed, and the package does not list it among its ", w.list));
  return Status::ok();
}

Status packedFiltersAgree(const PackageFunction& f) {
  return packedStepsAgree(
      f, f.packedFilters, [](const Step& s) { return s.kind() == StepKind::Conv && s.conv().packedFilter; },
      packedFilterFits, {"convolution", "its filter", "filter", "packed filters", "exec/packed_filter.h"});
}

Status packedGemmsAgree(const PackageFunction& f) {
  return packedStepsAgree(
      f, f.packedGemms, [](const Step& s) { return s.kind() == StepKind::Gemm && s.gemm().packedB; }, packedGemmFits,
      {"GEMM", "B", "B", "packed GEMMs", "exec/packed_gemm.h"});
}

MetaSection readMeta(const json& j) {
  MetaSection out;
  PackageMeta& m = out.meta;
  m.formatVersion = static_cast<uint32_t>(intAt(j, "format", 1, UINT32_MAX));
  m.kfuseVersion = stringAt(j, "kfuse_version");
  m.target = stringAt(j, "target");
  m.model = stringAt(j, "model");
  m.pipeline = stringAt(j, "pipeline");
  m.options = stringAt(j, "options");
  if (m.target == "cpu") {
    const json& c = at(j, "cpu");
    m.cpuTriple = stringAt(c, "triple");
    m.cpuName = stringAt(c, "name");
    for (const json& f : arrayAt(c, "features")) m.cpuFeatures.push_back(toString(f, "a CPU feature"));
  } else if (m.target == "cuda") {
    m.cudaArch = stringAt(at(j, "cuda"), "arch");
  } else {
    fail(str("unknown target '", m.target, "' (this kfuse runs cpu and cuda packages)"));
  }
  std::set<std::string, std::less<>> names;
  for (const json& p : arrayAt(j, "params")) {
    std::string name = stringAt(p, "name");
    if (!names.insert(name).second) fail(str("parameter '", name, "' is declared twice"));
    TensorType t = within(str("parameter '", name, "'"), [&] { return package::readType(at(p, "type")); });
    m.params.push_back({std::move(name), std::move(t), boolAt(p, "trainable")});
  }
  if (j.contains("training")) {
    const json& t = at(j, "training");
    m.training = PackageTraining{stringAt(t, "step"), stringAt(t, "forward"), stringAt(t, "loss"),
                                 stringAt(t, "optimizer"), boolAt(t, "labels")};
  }
  const json& fns = arrayAt(j, "functions");
  if (fns.empty() || fns.size() > kMaxFunctions) fail(str("the package holds ", fns.size(), " functions"));
  for (const json& f : fns) {
    PackageFunction fn;
    fn.name = stringAt(f, "name");
    within(str("function @", fn.name), [&] {
      fn.inputs = readTensors(at(f, "inputs"));
      fn.outputs = readTensors(at(f, "outputs"));
      // Absent from packages written before the lists existed: none.
      auto steps = [&](const char* key, std::vector<size_t>& out) {
        if (f.contains(key))
          for (int64_t s : intsAt(f, key, 0, kMaxSteps)) out.push_back(static_cast<size_t>(s));
      };
      steps("direct_convs", fn.directConvs);
      steps("packed_gemms", fn.packedGemms);
      steps("packed_epilogues", fn.packedEpilogues);
      steps("conv_epilogues", fn.convEpilogues);
      steps("packed_filters", fn.packedFilters);
    });
    out.functions.push_back(std::move(fn));
  }
  return out;
}

// Every parameter a plan names exists in the package with the plan's size.
Status checkPlanParams(const Plan& plan, const PackageMeta& meta) {
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::Param) continue;
    auto it = std::find_if(meta.params.begin(), meta.params.end(), [&](const PackageParam& p) { return p.name == b.param; });
    if (it == meta.params.end()) return Error(str("plan @", plan.function, " reads parameter @", b.param, ", which the package lacks"));
    if (it->type.byteSize() != b.type.byteSize())
      return Error(str("plan @", plan.function, ": parameter @", b.param, " is ", formatType(it->type), ", the plan expects ",
                       formatType(b.type)));
  }
  for (const auto& update : plan.updates)
    if (std::none_of(meta.params.begin(), meta.params.end(), [&](const PackageParam& p) { return p.name == update.first; }))
      return Error(str("plan @", plan.function, " updates parameter @", update.first, ", which the package lacks"));
  return Status::ok();
}

// The signature recorded in the meta matches the plan's inputs and outputs.
Status checkSignature(const PackageFunction& f) {
  const Plan& plan = *f.plan;
  if (f.inputs.size() != plan.inputs.size() || f.outputs.size() != plan.outputs.size())
    return Error(str("function @", f.name, ": its signature and its plan disagree on the number of inputs or outputs"));
  for (size_t i = 0; i < f.inputs.size(); ++i)
    if (f.inputs[i].type != plan.buffers[static_cast<size_t>(plan.inputs[i])].type)
      return Error(str("function @", f.name, ": input ", f.inputs[i].name, " has another type in the plan"));
  for (size_t i = 0; i < f.outputs.size(); ++i)
    if (f.outputs[i].type.byteSize() != plan.buffers[static_cast<size_t>(plan.outputs[i])].type.byteSize())
      return Error(str("function @", f.name, ": output ", f.outputs[i].name, " has another size in the plan"));
  return Status::ok();
}

}  // namespace

Status Package::read() {
  auto fail = [&](const Error& e) { return e.context(name_); };
  KF_ASSIGN_OR_RETURN(container_, package::readContainer(bytes_, name_));
  auto section = [&](const std::string& s) -> Expected<std::string_view> {
    if (const std::string_view* v = container_.find(s)) return *v;
    return fail(Error(str("the package has no '", s, "' section")));
  };
  KF_ASSIGN_OR_RETURN(std::string_view metaText, section(kMeta));
  auto metaSection = parseJson<MetaSection>(metaText, "meta", [](const json& j) { return readMeta(j); });
  if (!metaSection) return fail(metaSection.error().context("meta"));
  meta_ = std::move(metaSection->meta);
  if (meta_.formatVersion != container_.version)
    return fail(Error(str("meta says format ", meta_.formatVersion, ", the container ", container_.version)));
  KF_ASSIGN_OR_RETURN(std::string_view weightsBytes, section(kWeights));
  KF_ASSIGN_OR_RETURN(weights_, parseWeights(weightsBytes, str(name_, ": weights")));
  for (const PackageParam& p : meta_.params) {
    auto it = weights_.find(p.name);
    if (it == weights_.end()) return fail(Error(str("parameter '", p.name, "' has no data in the weights section")));
    if (it->second.dtype() != p.type.dtype || it->second.shape() != p.type.shape)
      return fail(Error(str("parameter '", p.name, "' is ", formatType(p.type), " but its data is ",
                            formatType(it->second.type()))));
  }
#if !KFUSE_PACKAGE_CUDA
  if (meta_.target == "cuda")
    return fail(Error("this is a cuda package, and this kfuse runtime was built without the cuda target"));
#endif
  for (size_t i = 0; i < metaSection->functions.size(); ++i) {
    PackageFunction f = std::move(metaSection->functions[i]);
    KF_ASSIGN_OR_RETURN(std::string_view planText, section(planSection(i)));
    auto plan = parsePlan(planText, weights_);
    if (!plan) return fail(plan.error());
    // Older packages' lists say what their plans do not mark (the *Agree
    // checks below hold either way).
    if (meta_.formatVersion < package::kMarkedPackedFiltersFormatVersion)
      for (size_t s : f.packedFilters)
        if (s < plan->steps.size() && plan->steps[s].kind() == StepKind::Conv) plan->steps[s].conv().packedFilter = true;
    if (meta_.formatVersion < package::kMarkedPackedGemmsFormatVersion)
      for (size_t s : f.packedGemms)
        if (s < plan->steps.size() && plan->steps[s].kind() == StepKind::Gemm) plan->steps[s].gemm().packedB = true;
    if (plan->function != f.name) return fail(Error(str("plan ", i, " is @", plan->function, ", the meta says @", f.name)));
    if (Status s = checkPlanParams(*plan, meta_); !s) return fail(s.error());
    f.plan = std::make_shared<const Plan>(std::move(*plan));
    if (Status s = checkSignature(f); !s) return fail(s.error());
    for (size_t s : f.directConvs) {
      if (s >= f.plan->steps.size() || f.plan->steps[s].kind() != StepKind::Conv)
        return fail(Error(str("function @", f.name, ": direct convolution at step ", s, ", which is not a convolution")));
      if (meta_.formatVersion < package::kWholePlanesFormatVersion && f.plan->steps[s].conv().wholePlanes())
        return fail(Error(str("function @", f.name, ": the direct convolution at step ", s, " was compiled by a kfuse "
                              "that split small planes by rows, and this kfuse splits them by channels; compile the "
                              "model again with this kfuse")));
      const ConvSpec& c = f.plan->steps[s].conv();
      if (meta_.formatVersion < package::kLargeWholePlanesFormatVersion && c.wholePlanes() &&
          c.oh * c.ow > ops::kWholePlanePixels)
        return fail(Error(str("function @", f.name, ": the direct convolution at step ", s, " was compiled by a kfuse "
                              "that ran planes past 32x32 as rows, and this kfuse runs them whole; compile the model "
                              "again with this kfuse")));
      if (meta_.formatVersion < package::kPackedRowUnitsFormatVersion && c.packedFilter &&
          !packedFilterUnitsHoldPlanes(c))
        return fail(Error(str("function @", f.name, ": the direct convolution at step ", s, " was compiled by a kfuse "
                              "that split 1x1 layers with a packed filter by planes, and this kfuse splits them by "
                              "rows; compile the model again with this kfuse")));
      if (meta_.formatVersion < package::kPointwisePanelsFormatVersion && c.pointwisePanels())
        return fail(Error(str("function @", f.name, ": the direct convolution at step ", s, " was compiled by a kfuse "
                              "that split 1x1 layers over whole planes by channels, and this kfuse splits them by "
                              "pixels; compile the model again with this kfuse")));
      if (Status e = epilogueAgrees(f, s, f.convEpilogues, static_cast<bool>(convEpilogue(*f.plan, s)),
                                    "direct convolution", "after the convolution",
                                    "; compile the model again with this kfuse");
          !e)
        return fail(e.error());
    }
    for (size_t s : f.packedFilters)
      if (std::find(f.directConvs.begin(), f.directConvs.end(), s) == f.directConvs.end())
        return fail(Error(str("function @", f.name, ": packed filter at step ", s,
                              ", which is not a direct convolution")));
    if (Status e = packedFiltersAgree(f); !e) return fail(e.error());
    for (size_t s : f.packedGemms)
      if (!packedGemmAllowed(*f.plan, s))
        return fail(Error(str("function @", f.name, ": packed GEMM at step ", s,
                              ", which is not a GEMM whose B stays constant (exec/packed_gemm.h)")));
    if (Status e = packedGemmsAgree(f); !e) return fail(e.error());
    for (size_t s : f.packedGemms) {
      if (Status e = epilogueAgrees(f, s, f.packedEpilogues, static_cast<bool>(packedEpilogue(*f.plan, s)),
                                    "packed GEMM", "after the GEMM", "");
          !e)
        return fail(e.error());
    }
    if (meta_.target == "cpu" && meta_.formatVersion < package::kSplitProloguesFormatVersion)
      for (const kernel::Kernel& k : f.plan->kernels)
        if (!k.prologue.empty())
          return fail(Error(str("function @", f.name, ": kernel ", k.name, " was compiled by a kfuse that ran kernels "
                                "with a prologue on one thread, and this kfuse splits them; compile the model again "
                                "with this kfuse")));
    if (meta_.target == "cpu")
      for (size_t s = 0; s < f.plan->steps.size(); ++s) {
        const Step& step = f.plan->steps[s];
        bool direct = std::find(f.directConvs.begin(), f.directConvs.end(), s) != f.directConvs.end();
        if (step.kind() == StepKind::Conv && step.conv().workspace < 0 && !direct)
          return fail(Error(str("function @", f.name, ": convolution step ", s,
                                " has neither an im2col workspace nor a direct convolution")));
      }
#if KFUSE_PACKAGE_CUDA
    if (meta_.target == "cuda") {
      KF_ASSIGN_OR_RETURN(std::string_view programText, section(cudaProgramSection(i)));
      auto program = cuda::parseProgram(programText, *f.plan);
      if (!program) return fail(program.error().context(str("function @", f.name)));
      if (program->arch != meta_.cudaArch)
        return fail(Error(str("function @", f.name, " is compiled for ", program->arch, ", the package for ", meta_.cudaArch)));
      for (size_t m = 0; m < program->modules.size(); ++m) {
        KF_ASSIGN_OR_RETURN(std::string_view cubin, section(cudaImageSection(i, m, false)));
        KF_ASSIGN_OR_RETURN(std::string_view ptx, section(cudaImageSection(i, m, true)));
        program->modules[m].cubin = std::string(cubin);
        program->modules[m].ptx = std::string(ptx);
      }
      KF_ASSIGN_OR_RETURN(std::string_view source, section(cudaSourceSection(i)));
      f.source = std::string(source);
      f.cuda = std::move(*program);
    }
#endif
    if (function(f.name)) return fail(Error(str("function @", f.name, " appears twice")));
    functions_.push_back(std::move(f));
  }
  if (functions_.empty()) return fail(Error("the package has no function"));
  if (meta_.training) {
    const PackageFunction* step = function(meta_.training->step);
    if (!step || !function(meta_.training->forward))
      return fail(Error("meta: the training functions it names are not in the package"));
    if (step->outputs.empty()) return fail(Error(str("@", step->name, " returns no loss")));
  }
  if (meta_.target == "cpu") {
    KF_ASSIGN_OR_RETURN(cpuSo_, section(kCpuSo));
    if (const std::string_view* ll = container_.find(kCpuLL)) cpuLL_ = *ll;
  }
  return Status::ok();
}

}  // namespace kfuse
