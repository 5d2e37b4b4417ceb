// kfuse test-onnx: ONNX backend-test folders through the importer and a
// target, one line per test and a summary; exit status 1 if any failed.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/onnx_backend_test.h"

namespace kfuse::cli {
namespace {

struct TestOnnxArgs {
  std::vector<std::string> dirs;
  std::string target = defaultTarget();
  std::string cpu;
  std::string filter;
  std::string markdown;
};

const char* outcomeName(TestOutcome o) {
  switch (o) {
    case TestOutcome::Pass: return "PASS";
    case TestOutcome::Fail: return "FAIL";
    case TestOutcome::Skip: return "SKIP";
  }
  return "?";
}

std::string escapeCell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The docs/onnx-support.md section for this run: the counts, then every test
// that did not pass with its reason.
std::string markdownSection(const TestOnnxArgs& a, const std::vector<BackendTestResult>& results, int pass, int failed,
                            int skip) {
  std::vector<std::string> names;
  for (const std::string& d : a.dirs) names.push_back(folderName(d));
  std::string out = str("### ", join(names, ", "), "\n\n`kfuse test-onnx ", join(a.dirs, " "), "`: ", pass,
                        " passed, ", failed, " failed, ", skip, " skipped.\n");
  if (pass + failed + skip == pass) return out;
  out += "\n| test | result | reason |\n|---|---|---|\n";
  for (const BackendTestResult& r : results)
    if (r.outcome != TestOutcome::Pass)
      out += str("| ", r.name, " | ", outcomeName(r.outcome), " | ", escapeCell(r.detail), " |\n");
  return out;
}

int runTestOnnx(const TestOnnxArgs& a) {
  auto backend = backendFor(a.target, {.cpu = a.cpu});
  if (!backend) return reportError("test-onnx", backend.error());
  auto tests = findBackendTests(a.dirs);
  if (!tests) return reportError("test-onnx", tests.error());
  std::vector<BackendTestResult> results;
  int pass = 0, failed = 0, skip = 0;
  for (const std::string& t : *tests) {
    if (!a.filter.empty() && folderName(t).find(a.filter) == std::string::npos)
      continue;
    BackendTestResult r = runBackendTest(t, *backend);
    (r.outcome == TestOutcome::Pass ? pass : r.outcome == TestOutcome::Fail ? failed : skip) += 1;
    std::cout << outcomeName(r.outcome) << " " << r.name << (r.detail.empty() ? "" : ": " + r.detail) << std::endl;
    results.push_back(std::move(r));
  }
  std::cout << pass << " passed, " << failed << " failed, " << skip << " skipped\n";
  if (!a.markdown.empty())
    if (Status s = writeFileAtomically(a.markdown, markdownSection(a, results, pass, failed, skip)); !s)
      return reportError("test-onnx", s.error());
  return failed > 0 ? 1 : 0;
}

// The tolerances as help text, from toleranceFor itself.
std::string toleranceHelp() {
  std::vector<std::string> parts;
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    Tolerance tol = toleranceFor(t);
    parts.push_back(str(dtypeName(t), " atol ", tol.atol, " rtol ", tol.rtol));
  }
  return join(parts, ", ");
}

}  // namespace

Action addTestOnnxCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "test-onnx",
      str("Run ONNX backend-test folders (model.onnx + test_data_set_*/{input,output}_*.pb): PASS/FAIL/SKIP per "
          "test. Outputs match when |got - want| <= atol + rtol*|want|: ",
          toleranceHelp(), "; integers and bool exactly"));
  auto a = std::make_shared<TestOnnxArgs>();
  cmd->add_option("dirs", a->dirs, "Test folders, or folders of test folders")->required();
  cmd->add_option("--target", a->target,
                  str("Where to run the models: ", join(availableTargets(), ", "), " (default ", defaultTarget(), ")"));
  addCpuFlag(cmd, a->cpu);
  cmd->add_option("--filter", a->filter, "Run only tests whose folder name contains this text");
  cmd->add_option("--markdown", a->markdown, "Also write the results as a Markdown section (docs/onnx-support.md)");
  return [a] { return runTestOnnx(*a); };
}

}  // namespace kfuse::cli
