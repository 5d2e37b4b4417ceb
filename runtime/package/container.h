// The package file's container: named binary sections, each with a CRC-32,
// behind a fixed header. Knows nothing of what the sections hold
// (package.h does).
//
//   offset 0   magic "KFPKG\r\n\x1a" (a text-mode transfer or a foreign file
//              shows up here), u32 format version, u32 section count,
//              u32 CRC-32 of the section table, u32 reserved (0)
//   offset 24  section table: per section a 56-byte entry: name (32 bytes,
//              NUL-padded), u64 offset, u64 size, u32 CRC-32 of the
//              section's bytes, u32 reserved (0)
//   then       the sections' bytes, each at a 64-byte-aligned offset.
// Integers are little-endian.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/support/expected.h"

namespace kfuse::package {

// The format this build writes, the newest it reads, and the oldest: format
// 2 changed the ABI of a cpu package's compiled functions (they take a range
// of work units, exec/parallel.h), so format 1's code cannot be called;
// format 3 added convolution steps that run backward (a plan's conv steps
// name their direction), which format 2's readers would run forward;
// format 4 computes small "same" convolutions as whole planes, split into
// work units by output channel instead of by row (ConvSpec::wholePlanes):
// an older package is read unless it has such a direct convolution;
// format 5 packs GEMMs whose B is past 2 MiB or 1024 rows, columns outer,
// their work units panels (exec/packed_gemm.h's packedColumnsOuter), which
// format 4's readers refuse; older packages never pack them and are read
// as before; format 6 has dropout inside kernels (the philox scalar op,
// ir/scalar_expr.h), which format 5's readers cannot parse; older packages
// ran dropout as a reference op, which still runs; format 7 has gathered
// loads and scatter-add stores in kernels (a row picked by a run-time
// index: ONNX Gather and its gradient, exec/kernel_ir.h), which format 6's
// readers would read as plain ones; older packages ran both as reference
// ops, which still run; format 8 splits cpu kernels with a prologue (the
// count a mean cross-entropy's gradient divides by) across threads, each
// range folding the prologue over every point (exec/parallel.h), while
// format 7's code folded it over its range only: an older cpu package with
// such a kernel is refused; format 9 computes ungrouped "same" convolutions
// of more than one tap over planes past 32x32 (up to
// ops::kDenseWholePlanePixels) as whole planes, split by channel, which
// format 8's code ran as rows: an older package with such a direct
// convolution is refused; format 10 runs a direct convolution's epilogue
// inside it, per block of output channels (exec/conv_epilogue.h), its code
// taking the epilogue's buffers too, and lists those convolutions
// (conv_epilogues): an older package with a direct convolution whose
// epilogue this kfuse would run inside is refused; format 11 runs small 1x1
// convolutions with a constant filter over a packed copy of it, output
// channels across the lanes (exec/packed_filter.h), and lists them
// (packed_filters): an older package with a direct convolution this kfuse
// would pass a packed filter is refused; format 12 marks them in the plan
// (ConvSpec::packedFilter, decided per CPU when the plan was built: taps
// too where the CPU's tiling says), still listing them: format 11's list
// marks its plans' steps when read, and older packages, which pack none,
// run as compiled; format 13 marks packed GEMMs in the plan too
// (GemmSpec::packedB, decided per CPU when the plan was built: how large an
// A a GEMM that runs columns outer may stream is the CPU's tiling's to
// say), still listing them: an older package's list marks its plans' steps
// when read; format 14 packs the filters of layers strided by 2 too, whose
// code reads their input in place (ops::packedFilterStrided), which a
// format-13 reader would refuse as a shape it cannot pack; older packages
// have none and run as compiled; format 15's code for a 1x1 layer with a
// packed filter takes output rows as its work units, not planes
// (exec/packed_filter.h's packedFilterRowUnits): an older package with such
// a layer over more than one row is refused (its code would read the
// runner's ranges as planes), one whose 1x1 layers are one row each (a
// row is a plane) runs as compiled; format 16 runs inside a direct
// convolution an epilogue that stores a buffer it does not read through
// other strides than y's, where no two outputs reach one element (a
// concat's run the epilogue writes in place of the concat's copy:
// codegen/plan/copy_elision.h, exec/conv_epilogue.h's storedOnly): an older
// package whose code runs such an epilogue after its convolution is
// refused (its code takes no epilogue buffers), others run as compiled;
// format 17 runs 1x1 convolutions over whole planes to no more channels
// than they read, their filter not packed, over panels (ConvSpec::pointwisePanels), in work units of pixels
// rather than of output planes: an older package with such a direct
// convolution is refused (its code would read the runner's ranges as
// planes), others run as compiled; format 18 packs the filters of layers
// whose output channels are not a multiple of 16, the packed copy and the
// work units padded to whole panels (ops::packedFilterOutputs), which a
// format-17 reader would pack and split unpadded; older packages have no
// such layer and run as compiled.
inline constexpr uint32_t kFormatVersion = 18;
inline constexpr uint32_t kOldestFormatVersion = 2;
inline constexpr uint32_t kWholePlanesFormatVersion = 4;
inline constexpr uint32_t kSplitProloguesFormatVersion = 8;
inline constexpr uint32_t kLargeWholePlanesFormatVersion = 9;
inline constexpr uint32_t kMarkedPackedFiltersFormatVersion = 12;
inline constexpr uint32_t kMarkedPackedGemmsFormatVersion = 13;
inline constexpr uint32_t kPackedRowUnitsFormatVersion = 15;
inline constexpr uint32_t kPointwisePanelsFormatVersion = 17;
inline constexpr size_t kMaxSectionName = 32;

class ContainerWriter {
 public:
  // Moved, not copied: its sections' views point into its own strings.
  ContainerWriter() = default;
  ContainerWriter(ContainerWriter&&) = default;
  ContainerWriter& operator=(ContainerWriter&&) = default;
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;
  // Names are unique, 1..31 printable ASCII characters.
  void add(std::string name, std::string bytes);
  // A section made of `pieces` in order, written from where they lie: the
  // caller keeps them alive and unchanged until the last write or finish.
  void addPieces(std::string name, std::vector<std::string_view> pieces);
  // `bytes` kept by the writer, for a piece of a section.
  std::string_view keep(std::string bytes) { return owned_.emplace_back(std::move(bytes)); }
  // The whole file, handed to `sink` in order, piece by piece: a package's
  // weights go to the file without a copy of them in memory.
  void write(const std::function<void(std::string_view)>& sink) const;
  // The file's length in bytes.
  uint64_t size() const;
  // The whole file in memory.
  std::string finish() const;

 private:
  struct Section {
    std::string name;
    std::vector<std::string_view> pieces;
    uint64_t size = 0;
  };
  std::vector<Section> sections_;
  std::deque<std::string> owned_;  // add's bytes: a deque, so the views into them stay valid
};

// Sections of a read container, as views into the caller's bytes.
struct Container {
  uint32_t version = 0;
  std::vector<std::pair<std::string, std::string_view>> sections;  // in file order

  // nullptr when absent.
  const std::string_view* find(std::string_view name) const;
};

// Checks the header, the table and every section's bounds and checksum.
// Errors start with `file` and say what is wrong: not a package, a newer
// format, truncated (where), a corrupted section (which).
Expected<Container> readContainer(std::string_view bytes, const std::string& file);

}  // namespace kfuse::package
