#include "tools/kfuse/train_data.h"

#include <cstring>
#include <filesystem>

#include "frontend/io/npz.h"
#include "ir/support/strings.h"
#include "ir/weights.h"

namespace kfuse::cli {

namespace {

Expected<TensorMap> readArrays(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".safetensors") return readWeightsFile(path);
  if (ext == ".npz") return io::readNpz(path);
  return Error(str("--data '", path, "': expected a .npz or .safetensors file"));
}

Expected<Tensor> pick(const TensorMap& arrays, const std::string& key, const std::string& path, const char* flag) {
  auto it = arrays.find(key);
  if (it != arrays.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, _] : arrays) names.push_back(name);
  return Error(str("--data '", path, "' has no array '", key, "' (", flag, "; it holds: ", join(names), ")"));
}

Tensor toI64(const Tensor& t) {
  Tensor out(TensorType(DType::I64, t.shape()));
  for (int64_t i = 0; i < t.numElements(); ++i) out.as<int64_t>()[i] = static_cast<int64_t>(t.at(i));
  return out;
}

// "a,b" -> {"a", "b"} (an empty name stays, and pick() names it missing).
std::vector<std::string> splitKeys(const std::string& keys) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = keys.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(keys.substr(start, comma - start));
  out.push_back(keys.substr(start));
  return out;
}

// The row-major coordinates of flat index i in `shape`.
std::vector<int64_t> unflatten(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

}  // namespace

Expected<Dataset> loadDataset(const std::string& path, const std::string& xKeys, const std::string& yKey,
                              LossKind loss) {
  KF_ASSIGN_OR_RETURN(TensorMap arrays, readArrays(path));
  Dataset d;
  for (const std::string& key : splitKeys(xKeys)) {
    KF_ASSIGN_OR_RETURN(Tensor x, pick(arrays, key, path, "--x-key"));
    d.xs.push_back(std::move(x));
    d.xKeys.emplace_back(key);
  }
  KF_ASSIGN_OR_RETURN(d.y, pick(arrays, yKey, path, "--y-key"));
  for (size_t i = 0; i < d.xs.size(); ++i) {
    const Tensor& x = d.xs[i];
    if (x.shape().empty() || d.y.shape().empty())
      return Error(str("--data '", path, "': the inputs and labels need a leading sample axis, got ",
                       formatType(x.type()), " and ", formatType(d.y.type())));
    if (x.shape()[0] != d.y.shape()[0])
      return Error(str("--data '", path, "': ", x.shape()[0], " input samples",
                       d.xs.size() > 1 ? str(" in '", d.xKeys[i], "'") : "", " but ", d.y.shape()[0], " labels"));
  }
  if (loss == LossKind::CrossEntropy) {
    if (!isInteger(d.y.dtype()))
      return Error(str("cross_entropy needs integer class labels, but '", yKey, "' is ", formatType(d.y.type()),
                       " (use --loss=mse for regression targets)"));
    if (d.y.dtype() != DType::I64) d.y = toI64(d.y);
  }
  return d;
}

std::vector<Tensor> Dataset::inputRows(const std::vector<int64_t>& order, int64_t begin, int64_t count) const {
  std::vector<Tensor> rows;
  for (const Tensor& x : xs) rows.push_back(gatherRows(x, order, begin, count));
  return rows;
}

Status checkDataset(const Dataset& d, const std::string& forward, const std::vector<NamedType>& inputs,
                    const std::vector<TensorType>& outputs, int64_t batch, LossKind loss, int64_t ignoreIndex) {
  if (inputs.size() != d.xs.size()) {
    std::vector<std::string> names;
    for (const NamedType& in : inputs) names.push_back("%" + in.name);
    return Error(str("@", forward, " takes ", inputs.size(), " input", inputs.size() == 1 ? "" : "s", " (",
                     join(names), ") but --x-key names ", d.xs.size(), " array", d.xs.size() == 1 ? "" : "s",
                     " (", join(d.xKeys), "): give one array per input, --x-key A,B,..."));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& in = inputs[i].type;
    const Tensor& x = d.xs[i];
    Shape sample(x.shape().begin() + 1, x.shape().end());
    Shape want(in.shape.begin() + (in.rank() ? 1 : 0), in.shape.end());
    if (sample != want || x.dtype() != in.dtype)
      return Error(str("the model's input %", inputs[i].name, " is ", formatType(in), " (samples ",
                       dtypeName(in.dtype), formatDims(want), "), but ",
                       d.xs.size() == 1 ? std::string("the data's samples") : str("the samples of '", d.xKeys[i], "'"),
                       " are ", dtypeName(x.dtype()), formatDims(sample)));
  }
  if (batch > d.size())
    return Error(str("--batch=", batch, " is larger than the dataset (", d.size(), " samples)"));
  if (outputs.empty()) return Error(str("@", forward, " returns nothing to train"));
  const TensorType& out = outputs[0];
  if (loss == LossKind::CrossEntropy) {
    if (out.rank() < 2)
      return Error(str("cross_entropy needs logits [batch, classes] or [batch, ..., classes], but the model returns ",
                       formatType(out)));
    // One label per sample ([N]), or per position of token logits ([N, S]).
    Shape perSample(out.shape.begin() + 1, out.shape.end() - 1);
    Shape labels(d.y.shape().begin() + 1, d.y.shape().end());
    if (labels != perSample) {
      std::string want = "[N";
      for (int64_t n : perSample) want += str(",", n);
      return Error(str("cross_entropy over the model's logits ", formatType(out), " needs labels ", want, "] (",
                       perSample.empty() ? "one class per sample" : "one class per position",
                       "), but the labels are ", formatType(d.y.type())));
    }
    int64_t classes = out.shape.back();
    int64_t perRow = std::max<int64_t>(d.y.numElements() / std::max<int64_t>(d.size(), 1), 1);
    for (int64_t i = 0; i < d.y.numElements(); ++i) {
      int64_t label = d.y.as<int64_t>()[i];
      if (label == ignoreIndex) continue;
      if (label < 0 || label >= classes) {
        std::string where = perSample.empty() ? str("of sample ", i) : str("at sample ", i / perRow, " position ",
                                                                          formatDims(unflatten(i % perRow, perSample)));
        return Error(str("label ", label, " ", where, " is out of range for the model's ", classes,
                         " classes (and is not the ignored label ", ignoreIndex, ", --ignore-index)"));
      }
    }
  } else if (loss == LossKind::MSE) {
    Shape target(d.y.shape().begin() + 1, d.y.shape().end());
    Shape outSample(out.shape.begin() + 1, out.shape.end());
    if (target != outSample || d.y.dtype() != out.dtype)
      return Error(str("mse needs targets shaped like the model's output ", formatType(out), " per sample (",
                       dtypeName(out.dtype), formatDims(outSample), "), but the labels are ", formatType(d.y.type()),
                       isInteger(d.y.dtype()) ? " (class labels: use --loss=cross_entropy)" : ""));
  }
  return Status::ok();
}

std::vector<int64_t> epochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (!shuffle) return order;
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch);
  auto next = [&state] {  // SplitMix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[next() % (i + 1)]);
  return order;
}

Tensor gatherRows(const Tensor& t, const std::vector<int64_t>& order, int64_t begin, int64_t count) {
  Shape shape = t.shape();
  shape[0] = count;
  Tensor out(TensorType(t.dtype(), shape, t.type().layout));
  size_t row = out.byteSize() / static_cast<size_t>(std::max<int64_t>(count, 1));
  for (int64_t r = 0; r < count; ++r)
    std::memcpy(out.data() + static_cast<size_t>(r) * row,
                t.data() + static_cast<size_t>(order[static_cast<size_t>(begin + r)]) * row, row);
  return out;
}

}  // namespace kfuse::cli
