// External data: read from the model's folder, with offsets and lengths;
// refused when the location leads outside the folder in any way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "frontend/onnx/external_data.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

class ExternalData : public testing::Test {
 protected:
  void SetUp() override {
    // One folder per test and process: CTest runs the tests in parallel.
    root_ = fs::temp_directory_path() /
            str("kfuse_external_data_", testing::UnitTest::GetInstance()->current_test_info()->name(), "_", ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model");
    fs::create_directories(root_ / "outside");
    std::ofstream(root_ / "model" / "w.bin", std::ios::binary).write("0123456789abcdef", 16);
    std::ofstream(root_ / "outside" / "secret.bin", std::ios::binary).write("secretsecretsecr", 16);
    fs::create_symlink("../outside/secret.bin", root_ / "model" / "link.bin");
  }

  // A model whose initializer 'w' (uint8 [n]) lives at `location`.
  static onnx::ModelProto modelWith(const std::string& location, const std::string& offset, int64_t n) {
    onnx::ModelProto m;
    TensorProto* w = m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(TensorProto::UINT8);
    w->add_dims(n);
    w->set_data_location(TensorProto::EXTERNAL);
    auto* loc = w->add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    if (!offset.empty()) {
      auto* off = w->add_external_data();
      off->set_key("offset");
      off->set_value(offset);
    }
    return m;
  }

  void TearDown() override { fs::remove_all(root_); }

  std::string load(onnx::ModelProto& m) {
    Status s = inlineExternalData(m, (root_ / "model").string(), "m.onnx");
    return s ? std::string() : s.error().message();
  }

  fs::path root_;
};

TEST_F(ExternalData, ReadsFromInsideTheFolder) {
  auto m = modelWith("w.bin", "4", 6);
  ASSERT_EQ(load(m), "");
  const TensorProto& w = m.graph().initializer(0);
  EXPECT_EQ(w.raw_data(), "456789");
  EXPECT_EQ(w.data_location(), TensorProto::DEFAULT);
  EXPECT_EQ(w.external_data_size(), 0);
}

TEST_F(ExternalData, RefusesEveryWayOut) {
  auto dotdot = modelWith("../outside/secret.bin", "", 16);
  EXPECT_EQ(load(dotdot),
            "m.onnx: initializer 'w': external data location '../outside/secret.bin' climbs out of the model's folder "
            "with '..' (refused: only files inside the model's folder are read)");
  auto hidden = modelWith("sub/../../outside/secret.bin", "", 16);
  EXPECT_NE(load(hidden).find("climbs out"), std::string::npos);
  auto absolute = modelWith((root_ / "outside" / "secret.bin").string(), "", 16);
  EXPECT_NE(load(absolute).find("is an absolute path (refused"), std::string::npos);
  auto link = modelWith("link.bin", "", 16);
  EXPECT_NE(load(link).find("resolves to '" + fs::canonical(root_ / "outside" / "secret.bin").string() +
                            "', outside the model's folder (refused"),
            std::string::npos);
  // Nothing was read: the tensors are still external.
  EXPECT_EQ(link.graph().initializer(0).data_location(), TensorProto::EXTERNAL);
}

TEST_F(ExternalData, ChecksRangesAndSizes) {
  auto beyond = modelWith("w.bin", "10", 8);
  EXPECT_EQ(load(beyond), "m.onnx: initializer 'w': external data range [10, 18) lies beyond the end of 'w.bin' "
                          "(16 bytes)");
  auto offsetPastEnd = modelWith("w.bin", "20", 1);
  EXPECT_NE(load(offsetPastEnd).find("lies beyond the end"), std::string::npos);
  auto badOffset = modelWith("w.bin", "-3", 1);
  EXPECT_EQ(load(badOffset), "m.onnx: initializer 'w': external data offset '-3' is not a non-negative integer");
  auto missing = modelWith("nothere.bin", "", 1);
  EXPECT_NE(load(missing).find("external data file 'nothere.bin' cannot be found"), std::string::npos);
  auto directory = modelWith(".", "", 1);
  EXPECT_NE(load(directory).find("is not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace kfuse::onnx_import
