#include "ir/attribute.h"

#include "ir/support/strings.h"

namespace kfuse {

std::string_view attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::Bool: return "bool";
    case AttrKind::String: return "string";
    case AttrKind::Ints: return "int list";
    case AttrKind::Floats: return "float list";
    case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

bool Attribute::operator==(const Attribute& o) const {
  if (kind() != o.kind()) return false;
  if (kind() == AttrKind::Tensor) return asTensor().identical(o.asTensor());
  if (kind() == AttrKind::Float) {  // bitwise, so that nan attributes compare equal to themselves
    double a = asFloat(), b = o.asFloat();
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
  return v_ == o.v_;
}

std::string formatTensorElements(const Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (i) out += ", ";
    double v = t.at(i);
    if (isFloat(t.dtype())) {
      out += t.dtype() == DType::F64 ? formatDouble(v) : formatFloat(static_cast<float>(v));
    } else if (t.dtype() == DType::Bool) {
      out += v != 0 ? "true" : "false";
    } else if (t.dtype() == DType::I64) {
      out += std::to_string(t.as<int64_t>()[i]);  // exact beyond 2^53
    } else {
      out += std::to_string(static_cast<int64_t>(v));
    }
  }
  return out + "]";
}

std::string formatAttribute(const Attribute& a) {
  switch (a.kind()) {
    case AttrKind::Int: return std::to_string(a.asInt());
    case AttrKind::Float: return formatDouble(a.asFloat());
    case AttrKind::Bool: return a.asBool() ? "true" : "false";
    case AttrKind::String: return quoteString(a.asString());
    case AttrKind::Ints: return str("[", join(a.asInts()), "]");
    case AttrKind::Floats: {
      std::vector<std::string> parts;
      for (double d : a.asFloats()) parts.push_back(formatDouble(d));
      return str("[", join(parts), "]");
    }
    case AttrKind::Tensor:
      return str("dense<", formatType(a.asTensor().type()), ">", formatTensorElements(a.asTensor()));
  }
  return "?";
}

}  // namespace kfuse
