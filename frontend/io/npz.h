// NumPy .npz archives: a zip of .npy members, one per array, as np.savez
// (stored) and np.savez_compressed (deflate) write them. Arrays are named
// as NumPy names them: the member name without its ".npy".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "frontend/io/zip.h"
#include "ir/weights.h"

namespace kfuse::io {

// Every array of the archive by name. Errors name the file and the member.
Expected<TensorMap> parseNpz(std::string_view bytes, const std::string& pathForMessages);
Expected<TensorMap> readNpz(const std::string& path);

struct NpzWriteOptions {
  bool compress = false;  // deflate, as np.savez_compressed
  bool forceZip64 = false;  // Zip64 records even when small (as NumPy writes)
};

// Arrays in the given order; names must be unique and non-empty. bf16 is
// written as float32 (NumPy has no bf16), as serializeNpy does.
Expected<std::string> serializeNpz(const std::vector<std::pair<std::string, const Tensor*>>& arrays,
                                   const NpzWriteOptions& opts = {});
// Written atomically: a failure leaves no partial file.
Status writeNpz(const std::string& path, const std::vector<std::pair<std::string, const Tensor*>>& arrays,
                const NpzWriteOptions& opts = {});

}  // namespace kfuse::io
