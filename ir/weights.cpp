#include "ir/weights.h"

#include <cctype>
#include <cstring>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse {
namespace {

// safetensors dtype spellings.
const char* stName(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::F64: return "F64";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

std::optional<DType> fromStName(std::string_view s) {
  for (DType t : kAllDTypes)
    if (s == stName(t)) return t;
  return std::nullopt;
}

// A reader for the JSON subset a safetensors header uses: objects, arrays,
// strings, integers. ir/ builds with the standard library alone (no JSON
// library), and this header grammar is all it needs to read.
class HeaderReader {
 public:
  HeaderReader(std::string_view s, const std::string& path) : s_(s), path_(path) {}

  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<int64_t> offsets;
  };

  Expected<std::map<std::string, Entry>> read() {
    std::map<std::string, Entry> out;
    KF_RETURN_IF_ERROR(expect('{'));
    if (peekIs('}')) return ++pos_, out;
    for (;;) {
      KF_ASSIGN_OR_RETURN(std::string key, readString());
      KF_RETURN_IF_ERROR(expect(':'));
      if (key == "__metadata__") {
        KF_RETURN_IF_ERROR(skipStringMap());
      } else {
        KF_ASSIGN_OR_RETURN(Entry e, readEntry(key));
        if (!out.emplace(key, std::move(e)).second) return fail(str("tensor '", key, "' appears twice"));
      }
      if (peekIs(',')) {
        ++pos_;
        continue;
      }
      KF_RETURN_IF_ERROR(expect('}'));
      return out;
    }
  }

 private:
  Error fail(const std::string& msg) const { return Error(str("weights file '", path_, "': malformed header: ", msg)); }
  void ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peekIs(char c) {
    ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  Status expect(char c) {
    if (!peekIs(c)) return fail(str("expected '", std::string(1, c), "' at byte ", pos_));
    ++pos_;
    return Status::ok();
  }
  Expected<std::string> readString() {
    KF_RETURN_IF_ERROR(expect('"'));
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size()) break;
        char e = s_[pos_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \" \\ \/ and the common controls
      } else {
        out += s_[pos_];
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) return fail("unterminated string");
    ++pos_;
    return out;
  }
  Expected<int64_t> readInt() {
    ws();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 18) return fail(str("expected a non-negative integer at byte ", start));
    return std::stoll(std::string(s_.substr(start, pos_ - start)));
  }
  Expected<std::vector<int64_t>> readIntList() {
    std::vector<int64_t> out;
    KF_RETURN_IF_ERROR(expect('['));
    if (peekIs(']')) return ++pos_, out;
    for (;;) {
      KF_ASSIGN_OR_RETURN(int64_t v, readInt());
      out.push_back(v);
      if (peekIs(',')) {
        ++pos_;
        continue;
      }
      KF_RETURN_IF_ERROR(expect(']'));
      return out;
    }
  }
  Status skipStringMap() {
    KF_RETURN_IF_ERROR(expect('{'));
    if (peekIs('}')) return ++pos_, Status::ok();
    for (;;) {
      KF_RETURN_IF_ERROR(readString().status());
      KF_RETURN_IF_ERROR(expect(':'));
      KF_RETURN_IF_ERROR(readString().status());
      if (peekIs(',')) {
        ++pos_;
        continue;
      }
      return expect('}');
    }
  }
  Expected<Entry> readEntry(const std::string& name) {
    Entry e;
    KF_RETURN_IF_ERROR(expect('{'));
    for (;;) {
      KF_ASSIGN_OR_RETURN(std::string field, readString());
      KF_RETURN_IF_ERROR(expect(':'));
      if (field == "dtype") {
        KF_ASSIGN_OR_RETURN(e.dtype, readString());
      } else if (field == "shape") {
        KF_ASSIGN_OR_RETURN(e.shape, readIntList());
      } else if (field == "data_offsets") {
        KF_ASSIGN_OR_RETURN(e.offsets, readIntList());
      } else {
        return fail(str("tensor '", name, "' has unknown field '", field, "'"));
      }
      if (peekIs(',')) {
        ++pos_;
        continue;
      }
      KF_RETURN_IF_ERROR(expect('}'));
      return e;
    }
  }

  std::string_view s_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

Expected<TensorMap> parseWeights(std::string_view bytes, const std::string& path) {
  auto fail = [&](const std::string& msg) { return Error(str("weights file '", path, "': ", msg)); };
  if (bytes.size() < 8) return fail("truncated: shorter than the 8-byte header length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i) headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (headerLen > bytes.size() - 8)
    return fail(str("truncated or not a safetensors file: header length ", headerLen, " exceeds the file size ",
                    bytes.size()));
  std::string_view header = bytes.substr(8, headerLen);
  std::string_view data = bytes.substr(8 + headerLen);
  KF_ASSIGN_OR_RETURN(auto entries, HeaderReader(header, path).read());
  TensorMap out;
  for (auto& [name, e] : entries) {
    auto dtype = fromStName(e.dtype);
    if (!dtype) return fail(str("tensor '", name, "' has unsupported dtype '", e.dtype, "'"));
    if (e.shape.size() > static_cast<size_t>(kMaxRank))
      return fail(str("tensor '", name, "' has rank ", e.shape.size(), " (maximum ", kMaxRank, ")"));
    if (e.offsets.size() != 2 || e.offsets[0] > e.offsets[1])
      return fail(str("tensor '", name, "' has malformed data_offsets"));
    TensorType type(*dtype, e.shape);
    // Guard the element count against overflow before trusting the shape.
    uint64_t elems = 1;
    for (int64_t d : e.shape) {
      if (d != 0 && elems > (uint64_t{1} << 48) / static_cast<uint64_t>(d))
        return fail(str("tensor '", name, "' has an absurd shape ", formatDims(e.shape)));
      elems *= static_cast<uint64_t>(d);
    }
    uint64_t need = elems * dtypeSize(*dtype);
    uint64_t have = static_cast<uint64_t>(e.offsets[1] - e.offsets[0]);
    if (need != have)
      return fail(str("tensor '", name, "' is ", formatType(type), " (", need, " bytes) but its data range holds ", have,
                      " bytes"));
    if (static_cast<uint64_t>(e.offsets[1]) > data.size())
      return fail(str("truncated: tensor '", name, "' ends at byte ", e.offsets[1], " of a ", data.size(),
                      "-byte data section"));
    Tensor t(type);
    if (need > 0) std::memcpy(t.data(), data.data() + e.offsets[0], need);
    out.emplace(name, std::move(t));
  }
  return out;
}

Expected<TensorMap> readWeightsFile(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  return parseWeights(bytes, path);
}

std::string weightsHeader(const std::vector<std::pair<std::string, const Tensor*>>& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    std::string escaped;
    for (char c : name) escaped += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    header += str(i ? "," : "", "\"", escaped, "\":{\"dtype\":\"", stName(t->dtype()), "\",\"shape\":[",
                  join(t->shape(), ","), "],\"data_offsets\":[", offset, ",", offset + t->byteSize(), "]}");
    offset += t->byteSize();
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';  // align data to 8 bytes, as the format recommends
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header;
}

std::string serializeWeights(const std::vector<std::pair<std::string, const Tensor*>>& tensors) {
  std::string out = weightsHeader(tensors);
  size_t total = out.size();
  for (const auto& [_, t] : tensors) total += t->byteSize();
  out.reserve(total);
  for (const auto& [_, t] : tensors) out.append(reinterpret_cast<const char*>(t->data()), t->byteSize());
  return out;
}

Status writeWeightsFile(const std::string& path, const std::vector<std::pair<std::string, const Tensor*>>& tensors) {
  return writeFileAtomically(path, [&](const ByteSink& sink) {
    sink(weightsHeader(tensors));
    for (const auto& [_, t] : tensors) sink({reinterpret_cast<const char*>(t->data()), t->byteSize()});
  });
}

}  // namespace kfuse
