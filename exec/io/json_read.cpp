// Type-checked JSON reading for plans and CUDA programs (json_read.h).
#include "exec/io/json_read.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

namespace kfuse::package::json_read {

void fail(std::string message) { throw Invalid{std::move(message)}; }

const json& at(const json& o, const char* key) {
  if (!o.is_object()) fail(str("expected an object holding '", key, "'"));
  auto it = o.find(key);
  if (it == o.end()) fail(str("missing field '", key, "'"));
  return *it;
}

int64_t toInt(const json& j, std::string_view what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) fail(str(what, " ", u, " is out of range [", lo, ", ", hi, "]"));
    v = static_cast<int64_t>(u);
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
  } else {
    fail(str(what, " must be an integer"));
  }
  if (v < lo || v > hi) fail(str(what, " ", v, " is out of range [", lo, ", ", hi, "]"));
  return v;
}
int64_t intAt(const json& o, const char* key, int64_t lo, int64_t hi) { return toInt(at(o, key), key, lo, hi); }

bool boolAt(const json& o, const char* key) {
  const json& j = at(o, key);
  if (!j.is_boolean()) fail(str("field '", key, "' must be a boolean"));
  return j.get<bool>();
}
bool optionalBool(const json& o, const char* key) { return o.contains(key) && boolAt(o, key); }

std::string toString(const json& j, std::string_view what) {
  if (!j.is_string()) fail(str(what, " must be a string"));
  return j.get<std::string>();
}
std::string stringAt(const json& o, const char* key) { return toString(at(o, key), str("field '", key, "'")); }

const json& arrayOf(const json& j, std::string_view what) {
  if (!j.is_array()) fail(str(what, " must be an array"));
  return j;
}
const json& arrayAt(const json& o, const char* key) { return arrayOf(at(o, key), str("field '", key, "'")); }

std::vector<int64_t> intsAt(const json& o, const char* key, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (const json& v : arrayAt(o, key)) out.push_back(toInt(v, str("an element of '", key, "'"), lo, hi));
  return out;
}

namespace {
constexpr uint64_t kQuietNaN = std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN());
}  // namespace

ojson writeDouble(double v) {
  if (std::isfinite(v)) return v;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  auto bits = std::bit_cast<uint64_t>(v);
  if (bits == kQuietNaN) return "nan";
  char hex[17] = {};
  std::to_chars(hex, hex + 16, bits, 16);
  return str("nan:0x", hex);
}

double readDouble(const json& j, std::string_view what) {
  if (j.is_number()) return j.get<double>();
  if (!j.is_string()) fail(str(what, " must be a number"));
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::bit_cast<double>(kQuietNaN);
  uint64_t bits = 0;
  if (s.size() > 6 && s.compare(0, 6, "nan:0x") == 0) {
    auto [end, ec] = std::from_chars(s.data() + 6, s.data() + s.size(), bits, 16);
    if (ec == std::errc() && end == s.data() + s.size() && std::isnan(std::bit_cast<double>(bits)))
      return std::bit_cast<double>(bits);
  }
  fail(str(what, " '", s, "' is not a number"));
}

}  // namespace kfuse::package::json_read
