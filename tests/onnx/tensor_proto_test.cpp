// TensorProto <-> Tensor: every dtype, raw and typed encodings, and the
// checks that keep corrupt protos from allocating absurd amounts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "frontend/onnx/tensor_proto.h"
#include "ir/support/file_io.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

using onnx::TensorProto;

TEST(TensorProto, RoundTripsEveryDType) {
  for (DType t : kAllDTypes) {
    Tensor x = Tensor::fromDoubles(TensorType(t, {2, 3}), {1, 0, 1, 0, 1, 1});
    TensorProto p;
    tensorToProto(x, "x", p);
    EXPECT_EQ(p.name(), "x");
    EXPECT_EQ(p.data_type(), onnxTypeOf(t));
    auto back = tensorFromProto(p, "x");
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_TRUE(back->identical(x)) << dtypeName(t);
  }
}

TEST(TensorProto, ReadsTypedFields) {
  TensorProto f;
  f.set_data_type(TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-2.0f);
  auto t = tensorFromProto(f, "f");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->toDoubles(), (std::vector<double>{1.5, -2.0}));

  // float16 travels as bit patterns in int32_data; 0x3c00 is 1.0.
  TensorProto h;
  h.set_data_type(TensorProto::FLOAT16);
  h.add_int32_data(0x3c00);
  auto half = tensorFromProto(h, "h");
  ASSERT_TRUE(half) << half.error().message();
  EXPECT_EQ(half->type(), TensorType(DType::F16, {}));
  EXPECT_EQ(half->at(0), 1.0);

  TensorProto i;
  i.set_data_type(TensorProto::INT64);
  i.add_dims(1);
  i.add_int64_data(INT64_MAX);
  auto big = tensorFromProto(i, "i");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->as<int64_t>()[0], INT64_MAX);
}

TEST(TensorProto, NormalisesBoolBytes) {
  TensorProto b;
  b.set_data_type(TensorProto::BOOL);
  b.add_dims(3);
  b.set_raw_data(std::string("\x00\x07\x01", 3));
  auto t = tensorFromProto(b, "b");
  ASSERT_TRUE(t);
  EXPECT_EQ(std::to_integer<int>(t->data()[1]), 1);
}

TEST(TensorProto, RejectsDataThatDoesNotMatchTheShape) {
  TensorProto raw;
  raw.set_data_type(TensorProto::FLOAT);
  raw.add_dims(4);
  raw.set_raw_data(std::string(8, '\0'));
  auto a = tensorFromProto(raw, "initializer 'w'");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message(), "initializer 'w' has 8 bytes of raw_data, its type f32[4] needs 16");

  TensorProto typed;
  typed.set_data_type(TensorProto::INT64);
  typed.add_dims(3);
  typed.add_int64_data(1);
  auto b = tensorFromProto(typed, "t");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message(), "t has 1 values in int64_data, its shape [3] needs 3");
}

// Dims claiming terabytes with no data behind them are an Error, not a
// std::bad_alloc: the data is checked before anything is allocated.
TEST(TensorProto, AbsurdDimsFailBeforeAllocating) {
  TensorProto p;
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(int64_t{1} << 20);
  p.add_dims(int64_t{1} << 20);
  auto t = tensorFromProto(p, "t");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message(), "t has 0 values in float_data, its shape [1048576,1048576] needs 1099511627776");

  p.add_dims(int64_t{1} << 20);
  auto overflow = tensorFromProto(p, "t");
  ASSERT_FALSE(overflow);
  EXPECT_EQ(overflow.error().message(), "t shape [1048576,1048576,1048576] has more than 2^48 elements");

  TensorProto negative;
  negative.set_data_type(TensorProto::FLOAT);
  negative.add_dims(-2);
  EXPECT_FALSE(tensorFromProto(negative, "t"));
}

TEST(TensorProto, NamesUnsupportedTypes) {
  TensorProto p;
  p.set_data_type(TensorProto::UINT16);
  auto t = tensorFromProto(p, "input 'x'");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message(), "input 'x': UINT16 elements are not supported");
  EXPECT_EQ(onnxTypeName(TensorProto::COMPLEX64), "COMPLEX64");
  EXPECT_EQ(onnxTypeName(99), "type 99");
}

TEST(TensorProto, RejectsRankAboveTheMaximum) {
  TensorProto p;
  p.set_data_type(TensorProto::FLOAT);
  for (int i = 0; i < 7; ++i) p.add_dims(1);
  p.add_float_data(1);
  auto t = tensorFromProto(p, "t");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message(), "t has rank 7, above kfuse's maximum of 6");
}

TEST(TensorProto, ReadsAndWritesPbFiles) {
  auto dir = std::filesystem::temp_directory_path() / ("kfuse_tensor_proto_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.pb").string();
  Tensor x = Tensor::fromDoubles(TensorType(DType::I32, {3}), {1, -2, 3});
  ASSERT_TRUE(writeTensorFile(path, x, "x"));
  std::string name;
  auto back = readTensorFile(path, &name);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->identical(x));
  EXPECT_EQ(name, "x");

  ASSERT_TRUE(writeFileAtomically(path, "\xff\xff\xff"));
  auto bad = readTensorFile(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "'" + path + "' is not a serialized ONNX TensorProto (corrupt or truncated)");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kfuse::onnx_import
