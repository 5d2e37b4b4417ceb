// How the work of a generated function splits across threads. Every
// function kfuse generates for the CPU takes a range of work units,
//
//   void <symbol>(void** buffers, int64_t begin, int64_t end);
//
// and does exactly the part of its work those units name, so that a runner
// may call it on disjoint ranges from several threads:
//   - a kernel: points of the first dim of its (merged) outer space
//     (exec/index_space.h), when its points are independent: no globals, no
//     final stores; otherwise one unit, the whole kernel. A prologue (a
//     count a mean divides by) is folded by every range over all points;
//   - a packed GEMM: rows of C; the function computes the blocks of rows
//     (its tiling's) that start in its range, each with its epilogue, so any
//     ranges that cover the rows once cover every block once;
//   - a direct convolution: output rows, (image, group, row) row-major;
//     one whose planes it takes whole (ConvSpec::wholePlanes): output
//     planes, (image, output channel) row-major; a 1x1 one over panels
//     (ConvSpec::pointwisePanels): blocks of ops::kPointwisePanelPixels
//     pixels of the flattened plane, (image, block) row-major, every output
//     channel each, an image's last block holding the rest; one that reads a packed
//     filter (exec/packed_filter.h): output rows of every channel, (image,
//     row, output channel) row-major, where it is 1x1, else output planes
//     as before (packedFilterRowUnits), its ranges starting on whole
//     vectors of channels (kPackedFilterChannels), the output channels
//     counted as the packed copy pads them (ops::packedFilterOutputs).
// The runner splits the steps it runs through libraries the same way: an
// im2col convolution by images, tiles of output rows and blocks of channels
// (by groups and input channels backward to the weights, where every image
// adds into the same filters; im2colSplit below, runtime/cpu_conv.h).
// Each unit is computed by the same code whatever the range around it, so
// results do not depend on the thread count: a chunk of a one-dim kernel
// starts on a multiple of kUnitAlignment, which keeps every element in the
// same position of the vectorised loop (vector and scalar math can differ
// in the last bit, libmvec's exp against libm's, say).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "exec/kernel_ir.h"
#include "exec/plan.h"

namespace kfuse {

// Work units larger than this many units' alignment never straddle a
// vector loop's body and its remainder differently (256 bytes' worth of
// one-byte elements is a whole AVX-512 vector loop unrolled four times).
inline constexpr int64_t kUnitAlignment = 256;

// The work of one generated function: its units, the multiple a chunk's
// start must be, and the work in all of them (flops or elements), for
// deciding whether splitting pays.
struct Work {
  int64_t units = 1;
  int64_t alignment = 1;
  double cost = 0;
};

Work kernelWork(const kernel::Kernel& k);
Work packedGemmWork(const GemmSpec& g);
Work directConvWork(const ConvSpec& c, bool packedFilter = false);
Work im2colConvWork(const ConvSpec& c);

// How an im2col convolution's work divides into units beyond images and
// groups, so that a batch of one still spreads over threads: forward, each
// image's output rows in tiles of about 512 pixels, and when images x tiles
// are fewer than kIm2colMinUnits, each group's output channels in blocks
// (the blocks of one tile share its patch matrix); backward to the input,
// each group's input channels in blocks when the images are too few; backward
// to the weights, each group's input channels in blocks when the groups are
// too few, or its output channels, in two blocks, where the inputs are too
// few to block (each such block builds the whole patch matrix). Units, in order
// (runtime/cpu_conv.h):
//   forward      (image, tile, output block), n * tiles * blocks
//   grad input   (image, input block),        n * blocks
//   grad weight  (group, input or output block), groups * blocks
// Every unit is one GEMM per group of a fixed shape, whatever the range
// around it, so the results do not depend on the thread count. A spec
// split neither way has tiles = blocks = 1 and covers whole images.
struct Im2colSplit {
  int64_t tiles = 1, tileRows = 0;         // output rows per tile (the last may hold fewer)
  int64_t blocks = 1, blockChannels = 0;   // channels per block (the last may hold fewer)
  bool outputBlocks = false;               // grad weight: the blocks are of output channels
};
inline constexpr int64_t kIm2colMinUnits = 4;
Im2colSplit im2colSplit(const ConvSpec& c);

// Images one im2col GEMM covers (runtime/cpu_conv.h): several when an image
// has few output pixels (a GEMM of 4 columns runs BLAS at a fraction of its
// speed), enough for about 128 columns, at most half the batch so that two
// threads still share the images. im2colConvWork's ranges start on
// multiples of it, so which images share a GEMM does not depend on the
// thread count.
int64_t im2colImagesPerGemm(const ConvSpec& c);
// The workspace of `images` images' GEMM, in rows of c.oh * c.ow elements:
// their patch matrices, and for NCHW images (whose outputs do not lie side
// by side) with more than one image, the block of outputs or output
// gradients the GEMM writes or reads.
int64_t im2colWorkspaceRows(const ConvSpec& c, int64_t images);

// A BLAS GEMM step's units (runtime/cpu_runner.cpp): its matrices, each
// cut, when the matrices are fewer than kIm2colMinUnits and the product is
// large, into blocks of `columns` columns of C (B's columns, or rows when
// transposed), so that one large GEMM (a language model's head, a training
// step's linear layers) spreads over threads; where C has too few columns
// to cut (a narrow model's linear layers, 128 wide), into blocks of `rows`
// rows of C instead (A's rows, or columns when transposed). Each unit is
// one BLAS call of a fixed shape: OpenBLAS's result for an element may
// depend on which rows and columns it is computed with, never on the calls
// around it.
struct GemmSplit {
  int64_t columns = 0, rows = 0, blocks = 1;  // rows > 0: blocks of rows, each `columns` (all) wide
};
GemmSplit blasGemmSplit(const GemmSpec& g);
Work blasGemmWork(const GemmSpec& g);

// Below this cost a function runs on one thread: waking the others costs
// more than the work (a few microseconds).
inline constexpr double kMinParallelCost = 32768;

// [begin, end) ranges for up to `threads` threads: contiguous, in order,
// covering [0, w.units), each but the last starting on a multiple of the
// alignment; one range when the work is too small to share.
std::vector<std::pair<int64_t, int64_t>> chunksOf(const Work& w, int threads);

}  // namespace kfuse
