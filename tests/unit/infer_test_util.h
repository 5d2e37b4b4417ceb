// Helpers for testing op inference through the registry exactly as the
// parser and frontends use it.
#pragma once

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/op_registry.h"
#include "tests/unit/test_util.h"

namespace kfuse::test {

// Infers the result types of `op` on inputs of the given types.
inline Expected<std::vector<TensorType>> infer(std::string_view op, std::vector<TensorType> inputs, AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::global().find(op);
  if (!def) return Error(str("unknown op ", op));
  KF_ASSIGN_OR_RETURN(AttrMap full, completeAttrs(*def, std::move(attrs)));
  return inferResultTypes(*def, full, inputs);
}

inline TensorType f32(Shape s) { return TensorType(DType::F32, std::move(s)); }
inline TensorType i64(Shape s) { return TensorType(DType::I64, std::move(s)); }

// Expects inference to fail with a message containing `fragment`.
#define EXPECT_INFER_ERROR(expr, fragment)                                            \
  do {                                                                                \
    auto r_ = (expr);                                                                 \
    ASSERT_FALSE(r_) << "expected an error containing: " << (fragment);               \
    EXPECT_NE(r_.error().message().find(fragment), std::string::npos) << r_.error().message(); \
  } while (0)

}  // namespace kfuse::test
