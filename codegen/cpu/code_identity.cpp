#include "codegen/cpu/code_identity.h"

#include "codegen/cpu/object_cache.h"
#include "exec/io/kernel_io.h"
#include "exec/io/plan_io.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

std::string describeTiling(const ConvTiling& t) {
  return str("conv tiling ", t.lanes, " ", t.vectors, " ", t.channels, " ", t.partialVectors, " ", t.chunkBytes, " ",
             t.denseVectors, " ", t.denseChannels, " ", t.denseRows, " ", t.halveLastVector, " ",
             t.pointwisePixels, " ", t.pointwiseVectors, " ", t.packedTaps);
}

std::string describeTiling(const GemmTiling& t) { return str("gemm tiling ", t.lanes, " ", t.vectors, " ", t.rows); }

std::string unnamed(kernel::Kernel k) {
  k.name.clear();
  return package::writeKernel(k).dump();
}

}  // namespace

std::string codeOf(const kernel::Kernel& k) { return str("kernel\n", unnamed(k)); }

std::string codeOf(const DirectConv& c) {
  ConvSpec spec = c.spec;
  spec.x = 0, spec.w = 1, spec.y = 3;
  spec.bias = spec.bias >= 0 ? 2 : -1;  // whether there is one is all the code reads
  spec.workspace = -1;                  // library convolutions' scratch; generated ones have none
  std::string blocks;
  for (const std::array<int64_t, 4>& b : c.blocks.strides) blocks += str(b[0], ",", b[1], ",", b[2], ",", b[3], ";");
  return str("conv\n", convSpecJson(spec), "\n", describeTiling(c.tiling), c.packedFilter ? " packed filter" : "", "\n",
             c.epilogue ? unnamed(*c.epilogue) : "none", "\n", blocks);
}

std::string codeOf(const PackedGemm& g) {
  GemmSpec spec = g.spec;
  spec.a = 0, spec.b = 1, spec.c = 2;
  std::string blocks = str(g.blocks.pointsPerRow);
  for (int64_t s : g.blocks.rowStrides) blocks += str(",", s);
  return str("gemm\n", gemmSpecJson(spec), "\n", describeTiling(g.tiling), "\n",
             g.epilogue ? unnamed(*g.epilogue) : "none", "\n", blocks);
}

std::string codeName(std::string_view kind, const std::string& code) {
  return str(kind, "_", ObjectCache::key({kind, code}).substr(0, 24));
}

}  // namespace kfuse::cpu
