// NumPy .npy files (format versions 1.0 to 3.0, little-endian, C order), the
// interchange format for inputs and outputs of `kfuse run`.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace kfuse {

Expected<Tensor> parseNpy(std::string_view bytes, const std::string& pathForMessages);
Expected<Tensor> readNpy(const std::string& path);
// bf16 has no NumPy dtype: it is written as float32 (exactly representable).
std::string serializeNpy(const Tensor& t);
Status writeNpy(const std::string& path, const Tensor& t);

}  // namespace kfuse
