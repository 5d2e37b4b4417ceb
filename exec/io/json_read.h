// Reading JSON that nothing vouches for (plans, CUDA programs): values read
// with their types and ranges checked, since nlohmann would convert a float
// to an integer silently and an out-of-range number undefinedly, and errors
// that say where they happened ("step 3 (fused_add_relu): kernel buffer 7
// out of range"). Shared by exec/io/plan_io.cpp, kernel_io.cpp and
// runtime/cuda/program_io.cpp; internal, not part of the public API.
//
// A reader throws Invalid (through fail) as nlohmann throws its own
// exceptions; `parseJson` runs a reader and turns both into an Error, so
// that nothing escapes the public parse functions.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/support/expected.h"
#include "ir/support/strings.h"

namespace kfuse::package::json_read {

using json = nlohmann::json;           // reading: keys looked up in a map
using ojson = nlohmann::ordered_json;  // writing: fields in a readable order

// ---- errors

struct Invalid {
  std::string message;
};
[[noreturn]] void fail(std::string message);

// Runs fn, prefixing the message of what it throws with `where`.
template <typename Fn>
decltype(auto) within(const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (Invalid& e) {
    e.message = str(where, ": ", e.message);
    throw;
  }
}

// Parses `text` and returns body(the document) (a T), or an Error: an
// Invalid's message as it is, anything else prefixed with `what` ("plan",
// "cuda program").
template <typename T, typename Body>
Expected<T> parseJson(std::string_view text, std::string_view what, Body&& body) {
  try {
    json j = json::parse(text.begin(), text.end());
    return body(j);
  } catch (const Invalid& e) {
    return Error(e.message);
  } catch (const json::exception& e) {
    return Error(str(what, ": malformed JSON: ", e.what()));
  } catch (const std::exception& e) {
    return Error(str(what, ": ", e.what()));
  }
}

// ---- values, with their types checked; `key` names a field of object `o`,
// `what` names the value in errors

const json& at(const json& o, const char* key);

// An integer in [lo, hi].
int64_t toInt(const json& j, std::string_view what, int64_t lo, int64_t hi);
int64_t intAt(const json& o, const char* key, int64_t lo, int64_t hi);

bool boolAt(const json& o, const char* key);
// False when the field is absent.
bool optionalBool(const json& o, const char* key);

std::string toString(const json& j, std::string_view what);
std::string stringAt(const json& o, const char* key);

const json& arrayOf(const json& j, std::string_view what);
const json& arrayAt(const json& o, const char* key);
// An array of integers, each in [lo, hi].
std::vector<int64_t> intsAt(const json& o, const char* key, int64_t lo, int64_t hi);

// Doubles exactly: finite ones as JSON numbers (nlohmann prints the digits
// that read back to the same bits), the rest as strings JSON can hold:
// "inf", "-inf", "nan" (the quiet NaN), "nan:0x7ff8000000000001" (any other).
ojson writeDouble(double v);
double readDouble(const json& j, std::string_view what);

// ---- enums by name: E's values are 0 .. count-1, named by name(E) or by
// names[E]

template <typename E, typename NameFn>
E enumNamed(const std::string& s, size_t count, NameFn name, std::string_view what) {
  for (size_t i = 0; i < count; ++i)
    if (name(static_cast<E>(i)) == s) return static_cast<E>(i);
  fail(str("unknown ", what, " '", s, "'"));
}
template <typename E, size_t N>
E enumNamed(const std::string& s, const std::array<std::string_view, N>& names, std::string_view what) {
  return enumNamed<E>(
      s, N, [&](E e) { return names[static_cast<size_t>(e)]; }, what);
}
template <typename E, size_t N>
std::string nameOf(E e, const std::array<std::string_view, N>& names) {
  return std::string(names[static_cast<size_t>(e)]);
}

}  // namespace kfuse::package::json_read
