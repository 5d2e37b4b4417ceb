// Small string helpers. ir/ builds with the standard library only, so this
// stands in for fmt where messages are assembled.
#pragma once

#include <charconv>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

// Concatenates anything streamable: str("node ", name, " has ", n, " inputs").
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// "a, b, c" from a range, each element streamed.
template <typename Range>
std::string join(const Range& r, std::string_view sep = ", ") {
  std::ostringstream os;
  bool first = true;
  for (const auto& x : r) {
    if (!first) os << sep;
    os << x;
    first = false;
  }
  return os.str();
}

// "[1,2,3]" for a list of integers (the IR's shape spelling).
std::string formatDims(const std::vector<int64_t>& dims, std::string_view sep = ",");

// Shortest text that parses back to exactly the same double; always contains
// '.', 'e', "inf" or "nan" so that it never reads as an integer.
std::string formatDouble(double v);

// Shortest text that round-trips a float (for f32 tensor data).
std::string formatFloat(float v);

// Quotes and escapes a string for the textual IR ("a\"b").
std::string quoteString(std::string_view s);

}  // namespace kfuse
