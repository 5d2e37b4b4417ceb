// print(parse(print(m))) == print(m) for every well-formed .kir file in the
// repository: lit inputs, examples and op reference cases.
#include <filesystem>
#include <fstream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/support/file_io.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

// Files meant to fail (error tests) say so in a RUN line.
bool expectsFailure(const std::string& text) { return text.find("RUN: not ") != std::string::npos; }

std::vector<std::string> kirFiles() {
  std::vector<std::string> out;
  for (const char* dir : {"tests/lit", "examples", "tests/ops/cases"}) {
    fs::path root = fs::path(test::sourceDir()) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.path().extension() == ".kir") out.push_back(fs::relative(e.path(), test::sourceDir()).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class RoundTripTest : public testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, PrintParsePrintIsStable) {
  std::string path = (fs::path(test::sourceDir()) / GetParam()).string();
  auto text = readFile(path);
  ASSERT_TRUE(text) << text.error().message();
  if (text->find("--split-input-file") != std::string::npos) GTEST_SKIP() << "several modules in one file";
  auto m1 = parseModule(*text, path);
  if (!m1 && expectsFailure(*text)) GTEST_SKIP() << "error test";
  ASSERT_TRUE(m1) << m1.error().message();
  std::string p1 = printModule(**m1);
  auto m2 = parseModule(p1, path);
  ASSERT_TRUE(m2) << "printed form does not parse:\n" << m2.error().message() << "\n" << p1;
  EXPECT_EQ(printModule(**m2), p1);
}

INSTANTIATE_TEST_SUITE_P(Files, RoundTripTest, testing::ValuesIn(kirFiles()), test::PathParamName());

}  // namespace
}  // namespace kfuse
