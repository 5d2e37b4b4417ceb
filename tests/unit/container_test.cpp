// The package container's writer: a section given in pieces is the same file
// as the section given whole, streamed or in memory, and reads back.
#include <gtest/gtest.h>

#include "runtime/package/container.h"

namespace kfuse::package {
namespace {

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed)) % 251);
  return s;
}

TEST(Container, PiecesWriteTheSameFileAsWholeSections) {
  const std::string meta = "{}", weights = pattern(1000, 1), code = pattern(77, 2);
  ContainerWriter whole;
  whole.add("meta", meta);
  whole.add("weights", weights);
  whole.add("cpu.so", code);
  whole.add("empty", "");
  const std::string expected = whole.finish();
  EXPECT_EQ(whole.size(), expected.size());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{999}, size_t{1000}}) {
    ContainerWriter pieces;
    pieces.add("meta", meta);
    std::string_view w = weights;
    pieces.addPieces("weights", {pieces.keep(std::string(w.substr(0, cut))), std::string_view(), w.substr(cut)});
    pieces.addPieces("cpu.so", {code});
    pieces.addPieces("empty", {});
    EXPECT_EQ(pieces.size(), expected.size()) << "cut at " << cut;
    EXPECT_EQ(pieces.finish(), expected) << "cut at " << cut;
    std::string streamed;
    size_t calls = 0;
    pieces.write([&](std::string_view piece) {
      streamed += piece;
      ++calls;
    });
    EXPECT_EQ(streamed, expected) << "cut at " << cut;
    EXPECT_GT(calls, 4u) << "the sections were not handed over in pieces";
  }
  auto read = readContainer(expected, "mem.kfpkg");
  ASSERT_TRUE(read) << read.error().message();
  ASSERT_NE(read->find("weights"), nullptr);
  EXPECT_EQ(*read->find("weights"), weights);
  EXPECT_EQ(*read->find("cpu.so"), code);
  EXPECT_EQ(read->find("empty")->size(), 0u);
}

TEST(Container, EverySectionStartsAligned) {
  ContainerWriter w;
  w.addPieces("a", {"x"});
  w.addPieces("b", {"yz", "w"});
  const std::string file = w.finish();
  auto read = readContainer(file, "mem.kfpkg");
  ASSERT_TRUE(read) << read.error().message();
  for (const auto& [name, bytes] : read->sections)
    EXPECT_EQ(static_cast<size_t>(bytes.data() - file.data()) % 64, 0u) << name;
  EXPECT_EQ(*read->find("b"), "yzw");
}

}  // namespace
}  // namespace kfuse::package
