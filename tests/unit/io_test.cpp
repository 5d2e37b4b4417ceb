// Weights (safetensors) and .npy round trips, and their refusal of damaged files.
#include <filesystem>

#include "ir/npy.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

TEST(Weights, RoundTripEveryDType) {
  std::vector<Tensor> ts;
  for (DType d : kAllDTypes) ts.push_back(Tensor::fromDoubles(TensorType(d, {2, 1}), {1, 0}));
  ts.push_back(Tensor::scalar(DType::F32, 2.5));
  std::vector<std::pair<std::string, const Tensor*>> named;
  for (size_t i = 0; i < ts.size(); ++i) named.emplace_back(str("t", i, "/\"q\""), &ts[i]);
  std::string bytes = serializeWeights(named);
  auto back = parseWeights(bytes, "mem");
  ASSERT_TRUE(back) << back.error().message();
  for (const auto& [name, t] : named) {
    ASSERT_TRUE(back->count(name)) << name;
    EXPECT_TRUE(back->at(name).identical(*t)) << name;
  }
}

TEST(Weights, EveryTruncationIsRefused) {
  Tensor t = Tensor::fromDoubles(TensorType(DType::F32, {3}), {1, 2, 3});
  std::string bytes = serializeWeights({{"w", &t}});
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = parseWeights(bytes.substr(0, n), "cut");
    EXPECT_FALSE(r) << "accepted a file cut at " << n << " bytes";
  }
}

TEST(Weights, CorruptHeadersNeverCrash) {
  Tensor t = Tensor::fromDoubles(TensorType(DType::F32, {3}), {1, 2, 3});
  std::string bytes = serializeWeights({{"w", &t}});
  // Flip every byte of the header in turn: each result is either a clean
  // error or a successfully parsed file, never a crash.
  for (size_t i = 8; i < bytes.size() - 12; ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    auto r = parseWeights(b, "flip");
    if (!r) {
      EXPECT_NE(r.error().message().find("weights file 'flip'"), std::string::npos);
    }
  }
}

TEST(Npy, RoundTrip) {
  Tensor t = Tensor::fromDoubles(TensorType(DType::I64, {2, 3}), {1, -2, 3, 4, 5, 6});
  auto back = parseNpy(serializeNpy(t), "mem");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->identical(t));
  Tensor s = Tensor::scalar(DType::F64, 0.1);
  auto sb = parseNpy(serializeNpy(s), "mem");
  ASSERT_TRUE(sb);
  EXPECT_TRUE(sb->identical(s));
  Tensor v = Tensor::fromDoubles(TensorType(DType::Bool, {3}), {1, 0, 1});
  auto vb = parseNpy(serializeNpy(v), "mem");
  ASSERT_TRUE(vb);
  EXPECT_TRUE(vb->identical(v));
}

TEST(Npy, RefusesFortranOrderAndTruncation) {
  Tensor t = Tensor::fromDoubles(TensorType(DType::F32, {2}), {1, 2});
  std::string bytes = serializeNpy(t);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(parseNpy(bytes.substr(0, n), "cut")) << n;
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  auto r = parseNpy(fortran, "f.npy");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("Fortran-order"), std::string::npos);
}

}  // namespace
}  // namespace kfuse
