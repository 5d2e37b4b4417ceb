#include "ir/support/strings.h"

#include <cmath>

namespace kfuse {

std::string formatDims(const std::vector<int64_t>& dims, std::string_view sep) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

namespace {
template <typename T>
std::string formatFloating(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string formatDouble(double v) { return formatFloating(v); }
std::string formatFloat(float v) { return formatFloating(v); }

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

}  // namespace kfuse
