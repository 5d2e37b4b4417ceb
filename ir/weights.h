// The weights file: safetensors (https://huggingface.co/docs/safetensors),
// an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. kfuse writes
// and reads it so that weights can be inspected or produced with standard
// tools (numpy, the `safetensors` Python package). Layout tags are not stored:
// the IR's parameter declarations carry them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace kfuse {

using TensorMap = std::map<std::string, Tensor, std::less<>>;

// Every error names the file and, where it applies, the tensor.
Expected<TensorMap> readWeightsFile(const std::string& path);
Expected<TensorMap> parseWeights(std::string_view bytes, const std::string& pathForMessages);
Status writeWeightsFile(const std::string& path, const std::vector<std::pair<std::string, const Tensor*>>& tensors);
std::string serializeWeights(const std::vector<std::pair<std::string, const Tensor*>>& tensors);
// What serializeWeights writes before the tensors' data: the header's
// length and the header. The data follows, each tensor's bytes in order.
std::string weightsHeader(const std::vector<std::pair<std::string, const Tensor*>>& tensors);

}  // namespace kfuse
