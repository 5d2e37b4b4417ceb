// Running ONNX backend-test folders (the layout of ONNX's own tests:
// model.onnx beside test_data_set_N/input_K.pb and output_K.pb) through the
// importer and a target, comparing outputs within per-dtype tolerances.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/backend.h"
#include "ir/tensor.h"

namespace kfuse::cli {

// An element passes when |got - want| <= atol + rtol * |want|; NaN matches
// NaN and infinities must match exactly. Integers and bool compare exactly.
struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance toleranceFor(DType t);
// The tolerance for test `test`'s outputs of type t: toleranceFor(t), except
// for the few tests whose expected values ONNX rounded by hand
// (onnx_backend_test.cpp lists them, with ONNX's own runner's bound).
Tolerance toleranceFor(DType t, std::string_view test);

enum class TestOutcome { Pass, Fail, Skip };

struct BackendTestResult {
  std::string name;  // the test folder's name
  TestOutcome outcome = TestOutcome::Fail;
  // Fail: the worst mismatch or the error; Skip: what kfuse does not support.
  std::string detail;
};

// The test folders named by `dirs`: a folder holding model.onnx is a test;
// any other folder contributes its subfolders that hold one (sorted).
Expected<std::vector<std::string>> findBackendTests(const std::vector<std::string>& dirs);

// The last component of a folder path, with or without a trailing slash.
std::string folderName(const std::string& dir);

// Imports one test folder, compiles it with the backend's pipeline and runs
// it on the backend's target. Never fails as a function: every problem
// becomes a Fail or Skip result.
BackendTestResult runBackendTest(const std::string& dir, const Backend& backend);

// Compares one output; an empty string when it matches, else the worst
// mismatch ("[1,2]: got 0.5, want 0.25 (|error| 0.25 > 1.0e-05)").
std::string compareTensors(const Tensor& got, const Tensor& want);
std::string compareTensors(const Tensor& got, const Tensor& want, Tolerance tol);

}  // namespace kfuse::cli
