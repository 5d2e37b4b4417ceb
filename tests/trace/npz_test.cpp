// .npz archives (frontend/io): files NumPy wrote (np.savez and
// np.savez_compressed, from gen_parity.py) read exactly; files kfuse wrote
// read by NumPy (check_npz.py); round trips; damaged archives refused with
// a message, never a crash.
#include <filesystem>

#include "frontend/io/npz.h"
#include "ir/npy.h"
#include "ir/weights.h"
#include "tests/trace/trace_test_util.h"

namespace {

namespace io = kfuse::io;
namespace fs = std::filesystem;
using kfuse::Tensor;
using kfuse::TensorType;
using kfuse::test::f32;

std::string parityData(const std::string& file) { return std::string(KFUSE_PARITY_DIR) + "/" + file; }

fs::path scratchDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kfuse_npz_test_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The arrays check_npz.py expects.
std::vector<std::pair<std::string, Tensor>> checkArrays() {
  std::vector<double> quarters;
  for (int i = 0; i < 12; ++i) quarters.push_back(i / 4.0);
  return {{"a", Tensor::fromDoubles(f32({3, 4}), quarters)},
          {"b", Tensor::fromDoubles(TensorType(kfuse::DType::I64, {2}), {-1, 1099511627776.0})},
          {"c", Tensor::fromDoubles(TensorType(kfuse::DType::Bool, {3}), {1, 0, 1})},
          {"d", Tensor::scalar(kfuse::DType::F16, 1.5)},
          {"e", Tensor(TensorType(kfuse::DType::F64, {0, 2}))}};
}

std::vector<std::pair<std::string, const Tensor*>> refs(const std::vector<std::pair<std::string, Tensor>>& arrays) {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (const auto& [name, t] : arrays) out.emplace_back(name, &t);
  return out;
}

TEST(Npz, ReadsWhatNumPyWrites) {
  auto want = kfuse::readWeightsFile(parityData("numpy_arrays.safetensors"));
  ASSERT_TRUE(want) << want.error().message();
  for (const char* file : {"numpy_arrays.npz", "numpy_arrays_compressed.npz"}) {
    auto got = io::readNpz(parityData(file));
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->size(), want->size()) << file;
    for (const auto& [name, t] : *want) {
      ASSERT_TRUE(got->count(name)) << file << ": " << name;
      EXPECT_TRUE(got->at(name).identical(t)) << file << ": " << name << " is " << formatType(got->at(name).type());
    }
  }
}

TEST(Npz, NumPyReadsWhatKfuseWrites) {
  fs::path dir = scratchDir("numpy");
  auto arrays = checkArrays();
  std::string files;
  int i = 0;
  for (io::NpzWriteOptions opts : {io::NpzWriteOptions{}, io::NpzWriteOptions{.compress = true},
                                   io::NpzWriteOptions{.compress = true, .forceZip64 = true},
                                   io::NpzWriteOptions{.forceZip64 = true}}) {
    std::string path = (dir / ("out" + std::to_string(i++) + ".npz")).string();
    ASSERT_TRUE(io::writeNpz(path, refs(arrays), opts));
    files += " " + path;
  }
  std::string cmd = std::string(KFUSE_PYTHON) + " " + KFUSE_SOURCE_DIR + "/tests/trace/check_npz.py" + files;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(dir);
}

TEST(Npz, RoundTripsEveryDTypeAndFlavour) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (kfuse::DType d : kfuse::kAllDTypes)
    if (d != kfuse::DType::BF16) arrays.emplace_back(std::string(kfuse::dtypeName(d)), Tensor::fromDoubles(TensorType(d, {2, 1}), {1, 0}));
  arrays.emplace_back("scalar", Tensor::scalar(kfuse::DType::F32, 2.5));
  arrays.emplace_back("name with spaces/and slash", Tensor(f32({0})));
  for (bool compress : {false, true})
    for (bool zip64 : {false, true}) {
      auto bytes = io::serializeNpz(refs(arrays), {.compress = compress, .forceZip64 = zip64});
      ASSERT_TRUE(bytes) << bytes.error().message();
      auto back = io::parseNpz(*bytes, "mem");
      ASSERT_TRUE(back) << back.error().message();
      ASSERT_EQ(back->size(), arrays.size());
      for (const auto& [name, t] : arrays) EXPECT_TRUE(back->at(name).identical(t)) << name;
    }
  // bf16 has no NumPy dtype: it is written as f32, exactly.
  Tensor bf = Tensor::fromDoubles(TensorType(kfuse::DType::BF16, {2}), {1.5, -2});
  auto bytes = io::serializeNpz({{"bf", &bf}});
  ASSERT_TRUE(bytes);
  EXPECT_EQ(io::parseNpz(*bytes, "mem")->at("bf").toDoubles(), (std::vector<double>{1.5, -2}));
  auto empty = io::parseNpz(*io::serializeNpz({}), "mem");
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_TRUE(empty->empty());
}

TEST(Npz, CompressionShrinksRepetitiveData) {
  Tensor zeros(f32({256, 256}));
  auto stored = io::serializeNpz({{"z", &zeros}});
  auto packed = io::serializeNpz({{"z", &zeros}}, {.compress = true});
  ASSERT_TRUE(stored && packed);
  EXPECT_GT(stored->size(), 256u * 256 * 4);
  EXPECT_LT(packed->size(), 2000u);
  EXPECT_TRUE(io::parseNpz(*packed, "mem")->at("z").identical(zeros));
}

TEST(Npz, EveryTruncationIsRefused) {
  Tensor t = Tensor::fromDoubles(f32({3}), {1, 2, 3});
  for (bool compress : {false, true}) {
    std::string bytes = *io::serializeNpz({{"t", &t}}, {.compress = compress});
    for (size_t n = 0; n < bytes.size(); ++n)
      EXPECT_FALSE(io::parseNpz(bytes.substr(0, n), "cut")) << "accepted a file cut at " << n << " bytes";
  }
}

TEST(Npz, CorruptArchivesNeverCrash) {
  Tensor t = Tensor::fromDoubles(f32({4}), {1, 2, 3, 4});
  for (bool compress : {false, true})
    for (bool zip64 : {false, true}) {
      std::string bytes = *io::serializeNpz({{"t", &t}}, {.compress = compress, .forceZip64 = zip64});
      // Each flipped byte gives a clean error or a parsed archive.
      for (size_t i = 0; i < bytes.size(); ++i) {
        std::string b = bytes;
        b[i] = static_cast<char>(b[i] ^ 0x5a);
        auto r = io::parseNpz(b, "flip");
        if (!r) {
          EXPECT_TRUE(kfuse::test::contains(r.error().message(), "'flip")) << r.error().message();
        }
      }
    }
}

TEST(Npz, DamagedDataFailsItsCrc) {
  Tensor t = Tensor::fromDoubles(f32({4}), {1, 2, 3, 4});
  std::string bytes = *io::serializeNpz({{"t", &t}});
  size_t magic = bytes.find(std::string("\x93NUMPY"));
  size_t headerLen = static_cast<uint8_t>(bytes[magic + 8]) | (static_cast<uint8_t>(bytes[magic + 9]) << 8);
  size_t payload = magic + 10 + headerLen + 2;  // inside the array data
  bytes[payload] ^= 1;
  auto r = io::parseNpz(bytes, "x.npz");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "zip archive 'x.npz': member 't.npy': CRC-32 mismatch (damaged data)");
}

TEST(Npz, ErrorsSayWhatIsWrong) {
  EXPECT_EQ(io::parseNpz("hello", "h.npz").error().message(), "zip archive 'h.npz': too short to be a zip archive");
  EXPECT_EQ(io::parseNpz(std::string(100, 'x'), "h.npz").error().message(),
            "zip archive 'h.npz': no end-of-central-directory record (not a zip archive, or truncated)");
  std::string text = "not an array";
  std::string zip = io::writeZip({{"notes.txt", text}});
  EXPECT_EQ(io::parseNpz(zip, "n.npz").error().message(), ".npz file 'n.npz': member 'notes.txt' is not a .npy array");
  std::string npy = kfuse::serializeNpy(Tensor(f32({1})));
  std::string twice = io::writeZip({{"a.npy", npy}, {"a.npy", npy}});
  EXPECT_EQ(io::parseNpz(twice, "t.npz").error().message(), ".npz file 't.npz': member 'a.npy' appears twice");
  std::string bad = io::writeZip({{"a.npy", text}});
  EXPECT_EQ(io::parseNpz(bad, "b.npz").error().message(), "'b.npz:a.npy': not a .npy file (bad magic)");

  // Flags and methods, patched in the central directory entry (offset 8: flags, 10: method).
  std::string archive = io::writeZip({{"a.npy", text}});
  size_t central = archive.find("PK\x01\x02");
  std::string encrypted = archive;
  encrypted[central + 8] = 1;
  EXPECT_EQ(io::parseNpz(encrypted, "e.npz").error().message(), "zip archive 'e.npz': member 'a.npy' is encrypted");
  std::string bzip = archive;
  bzip[central + 10] = 12;
  EXPECT_EQ(io::parseNpz(bzip, "z.npz").error().message(),
            "zip archive 'z.npz': member 'a.npy' uses compression method 12 (only stored and deflate are supported)");

  Tensor t(f32({1}));
  EXPECT_EQ(io::serializeNpz({{"a", &t}, {"a", &t}}).error().message(), "the .npz array name 'a' is given twice");
  EXPECT_EQ(io::serializeNpz({{"", &t}}).error().message(), "an .npz array needs a non-empty name");
}

TEST(Npz, WritesAtomically) {
  Tensor t(f32({1}));
  kfuse::Status s = io::writeNpz("/nonexistent-dir/a.npz", {{"a", &t}});
  ASSERT_FALSE(s);
  EXPECT_TRUE(kfuse::test::contains(s.message(), "/nonexistent-dir/a.npz")) << s.message();
  auto missing = io::readNpz("/nonexistent-dir/a.npz");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(kfuse::test::contains(missing.error().message(), "cannot read '/nonexistent-dir/a.npz'"));
}

TEST(Zip, Zip64RecordsRoundTrip) {
  std::string big(70000, 'q');
  std::vector<std::pair<std::string, std::string_view>> members = {{"one", "1"}, {"two", big}, {"empty", ""}};
  for (io::ZipMethod method : {io::ZipMethod::Stored, io::ZipMethod::Deflate}) {
    std::string bytes = io::writeZip(members, {.method = method, .forceZip64 = true});
    auto back = io::readZip(bytes, "z64");
    ASSERT_TRUE(back) << back.error().message();
    ASSERT_EQ(back->size(), 3u);
    for (size_t i = 0; i < members.size(); ++i) {
      EXPECT_EQ((*back)[i].name, members[i].first);
      EXPECT_EQ((*back)[i].data, members[i].second);
    }
  }
}

}  // namespace
