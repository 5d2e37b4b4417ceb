#include "tools/common/tensor_args.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse::cli {
namespace {

// Output names become file names: characters that are not safe in one
// (ONNX names like "/fc/Gemm_output_0") become '_'.
std::string fileStem(const std::string& name) {
  std::string out = name;
  for (char& ch : out)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')) ch = '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

}  // namespace

Expected<std::vector<Tensor>> gatherInputs(const std::vector<NamedType>& signature, const std::string& function,
                                           const std::vector<std::string>& specs, const TensorReader& read) {
  std::map<std::string, std::string> files;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      return Error(str("--input expects NAME=FILE, got '", s, "'"));
    std::string name = s.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    if (std::none_of(signature.begin(), signature.end(), [&](const NamedType& t) { return t.name == name; })) {
      std::vector<std::string> known;
      for (const NamedType& t : signature) known.push_back(t.name);
      return Error(str("--input names '", name, "', which is not an input of @", function, " (inputs: ", join(known), ")"));
    }
    files[name] = s.substr(eq + 1);
  }
  std::vector<Tensor> args;
  for (const NamedType& in : signature) {
    auto it = files.find(in.name);
    if (it == files.end()) return Error(str("missing --input for ", sigilName('%', in.name), " : ", formatType(in.type)));
    KF_ASSIGN_OR_RETURN(Tensor t, read(it->second));
    if (t.dtype() != in.type.dtype || t.shape() != in.type.shape)
      return Error(str("input ", sigilName('%', in.name), " from '", it->second, "' is ", formatType(t.type()),
                       ", the model expects ", formatType(in.type)));
    args.push_back(std::move(t));
  }
  return args;
}

std::string summarize(const Tensor& t) {
  std::vector<double> v = t.toDoubles();
  std::ostringstream os;
  os << formatType(t.type());
  if (v.empty()) return os.str();
  double lo = v[0], hi = v[0], sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  os << std::setprecision(6) << "  min " << lo << "  max " << hi << "  mean " << sum / static_cast<double>(v.size())
     << "  [";
  for (size_t i = 0; i < std::min<size_t>(v.size(), 6); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() > 6 ? ", ...]" : "]");
  return os.str();
}

Status reportOutputs(const std::vector<Tensor>& outputs, const std::vector<std::string>& names, const std::string& dir,
                     const std::string& ext, const TensorWriter& write) {
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error(str("cannot create output directory '", dir, "': ", ec.message()));
  }
  std::set<std::string> stems;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = i < names.size() ? names[i] : "";
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = str("output", i);
    std::cout << name << ": " << summarize(outputs[i]) << "\n";
    if (dir.empty()) continue;
    std::string stem = fileStem(name);
    if (!stems.insert(stem).second) stem = str(stem, "_", i);
    std::string path = (std::filesystem::path(dir) / (stem + "." + ext)).string();
    KF_RETURN_IF_ERROR(write(path, outputs[i], name));
    std::cout << "  written to " << path << "\n";
  }
  return Status::ok();
}

}  // namespace kfuse::cli
