// Zip archives, as far as NumPy's .npz files need them: members stored or
// deflate-compressed, Zip64 extensions (NumPy writes them), no encryption,
// one disk. The reader trusts the central directory for sizes (so data
// descriptors need no special case) and checks every CRC-32.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/support/expected.h"

namespace kfuse::io {

struct ZipMember {
  std::string name;
  std::string data;  // uncompressed
};

// Every member in central-directory order. Each error names the archive
// and, where it applies, the member.
Expected<std::vector<ZipMember>> readZip(std::string_view bytes, const std::string& pathForMessages);

enum class ZipMethod { Stored, Deflate };

struct ZipWriteOptions {
  ZipMethod method = ZipMethod::Stored;
  // Zip64 records for every member and the end of the archive, whatever the
  // sizes (they are written anyway when a size or offset needs them).
  bool forceZip64 = false;
};

// The archive as bytes. Timestamps are fixed (1980-01-01 00:00) so that the
// same members always give the same bytes.
std::string writeZip(const std::vector<std::pair<std::string, std::string_view>>& members,
                     const ZipWriteOptions& opts = {});

}  // namespace kfuse::io
