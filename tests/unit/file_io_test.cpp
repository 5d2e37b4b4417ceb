// readFile: regular files whole (sized up front), and files without a size
// (a FIFO, as a shell's <(...) gives) streamed; errors name the path.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / str("kfuse_file_io_", name, "_", ::getpid());
  fs::remove_all(p);
  return p;
}

TEST(ReadFile, RegularFilesWholeWithEveryByte) {
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 256);
  fs::path path = scratch("regular");
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto read = readFile(path.string());
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(*read, bytes);
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  auto empty = readFile(path.string());
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_EQ(*empty, "");
  fs::remove(path);
}

TEST(ReadFile, PipesAreStreamed) {
  fs::path path = scratch("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const std::string text = "module @m {}\n";
  std::thread writer([&] { std::ofstream(path) << text; });
  auto read = readFile(path.string());
  writer.join();
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(*read, text);
  fs::remove(path);
}

TEST(ReadFile, ErrorsNameThePath) {
  auto missing = readFile("/nonexistent/kfuse.kir");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("cannot read '/nonexistent/kfuse.kir'"), std::string::npos);
  auto dir = readFile(fs::temp_directory_path().string());
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message().find("it is a directory"), std::string::npos);
}

TEST(WriteFileAtomically, PiecesInOrderAndNothingOnFailure) {
  fs::path path = scratch("pieces");
  const std::string big(1 << 20, 'b');
  Status s = writeFileAtomically(path.string(), [&](const ByteSink& sink) {
    sink("head:");
    sink("");
    sink(big);
    sink(":tail");
  });
  ASSERT_TRUE(s) << s.error().message();
  auto read = readFile(path.string());
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(*read, "head:" + big + ":tail");
  // A directory that is not there: an error naming the path, no file made.
  fs::path missing = path / "no" / "such.kfpkg";
  Status bad = writeFileAtomically(missing.string(), [&](const ByteSink& sink) { sink("x"); });
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find(missing.string()), std::string::npos);
  fs::remove(path);
}

}  // namespace
}  // namespace kfuse
