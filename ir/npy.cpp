#include "ir/npy.h"

#include <cstring>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse {
namespace {

struct Descr {
  const char* code;
  DType dtype;
};
// '|' marks byte-sized types whose byte order does not apply.
constexpr Descr kDescrs[] = {{"<f4", DType::F32}, {"<f2", DType::F16}, {"<f8", DType::F64}, {"<i8", DType::I64},
                             {"<i4", DType::I32}, {"|i1", DType::I8},  {"|u1", DType::U8},  {"|b1", DType::Bool}};

// Finds the value text after 'key': in the header dict.
std::optional<std::string> dictValue(const std::string& h, const std::string& key) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos) return std::nullopt;
  auto colon = h.find(':', k);
  if (colon == std::string::npos) return std::nullopt;
  size_t start = colon + 1;
  while (start < h.size() && h[start] == ' ') ++start;
  size_t end = start;
  if (start < h.size() && h[start] == '(') {
    end = h.find(')', start);
    if (end == std::string::npos) return std::nullopt;
    ++end;
  } else {
    while (end < h.size() && h[end] != ',' && h[end] != '}') ++end;
  }
  return h.substr(start, end - start);
}

}  // namespace

Expected<Tensor> parseNpy(std::string_view bytes, const std::string& path) {
  auto fail = [&](const std::string& msg) { return Error(str("'", path, "': ", msg)); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") return fail("not a .npy file (bad magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail("truncated .npy header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i) headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[8 + static_cast<size_t>(i)]);
    headerStart = 12;
  } else {
    return fail(str("unsupported .npy format version ", major));
  }
  if (headerStart + headerLen > bytes.size()) return fail("truncated .npy header");
  std::string header(bytes.substr(headerStart, headerLen));
  auto descr = dictValue(header, "descr");
  auto fortran = dictValue(header, "fortran_order");
  auto shapeText = dictValue(header, "shape");
  if (!descr || !fortran || !shapeText) return fail("malformed .npy header: " + header);
  if (*fortran != "False") return fail("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  std::string code = descr->size() >= 2 ? descr->substr(1, descr->size() - 2) : "";
  if (code == "=f4" || code == "=f8" || code == "=i8" || code == "=i4" || code == "=f2") code[0] = '<';
  if (code == "<i1" || code == "<u1" || code == "<b1") code[0] = '|';
  std::optional<DType> dtype;
  for (const Descr& d : kDescrs)
    if (code == d.code) dtype = d.dtype;
  if (!dtype) return fail(str("unsupported dtype ", *descr, " (kfuse reads f32, f16, f64, i64, i32, i8, u8, bool)"));
  Shape shape;
  std::string inner = shapeText->substr(1, shapeText->size() - 2);
  size_t p = 0;
  while (p < inner.size()) {
    while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
    if (p >= inner.size()) break;
    size_t q = p;
    while (q < inner.size() && std::isdigit(static_cast<unsigned char>(inner[q]))) ++q;
    if (q == p || q - p > 15) return fail("malformed shape in .npy header: " + *shapeText);
    shape.push_back(std::stoll(inner.substr(p, q - p)));
    p = q;
  }
  if (shape.size() > static_cast<size_t>(kMaxRank)) return fail(str("rank ", shape.size(), " exceeds ", kMaxRank));
  TensorType type(*dtype, shape);
  size_t dataStart = headerStart + headerLen;
  // Guard against overflow of absurd shapes before comparing sizes.
  uint64_t elems = 1;
  for (int64_t d : shape) {
    if (d != 0 && elems > (uint64_t{1} << 48) / static_cast<uint64_t>(d)) return fail("absurd shape " + *shapeText);
    elems *= static_cast<uint64_t>(d);
  }
  if (bytes.size() - dataStart != elems * dtypeSize(*dtype))
    return fail(str("data size ", bytes.size() - dataStart, " does not match ", formatType(type), " (",
                    elems * dtypeSize(*dtype), " bytes)"));
  Tensor t(type);
  if (t.byteSize() > 0) std::memcpy(t.data(), bytes.data() + dataStart, t.byteSize());
  return t;
}

Expected<Tensor> readNpy(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  return parseNpy(bytes, path);
}

std::string serializeNpy(const Tensor& in) {
  Tensor t = in;
  if (t.dtype() == DType::BF16) t = Tensor::fromDoubles(TensorType(DType::F32, in.shape()), in.toDoubles());
  const char* code = "<f4";
  for (const Descr& d : kDescrs)
    if (d.dtype == t.dtype()) code = d.code;
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.shape().size() > 1) shape.pop_back();  // (3,) for rank 1, (2,3) otherwise
  shape += ")";
  std::string header = str("{'descr': '", code, "', 'fortran_order': False, 'shape': ", shape, ", }");
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(t.data()), t.byteSize());
  return out;
}

Status writeNpy(const std::string& path, const Tensor& t) { return writeFileAtomically(path, serializeNpy(t)); }

}  // namespace kfuse
