// Kernel IR: one description per fused group, read by every code generator
// (LLVM IR for the CPU, CUDA C for NVIDIA GPUs) and by the kernel
// interpreter that checks them.
//
// A kernel iterates over an index space of `outer` dims (independent: any
// order, any parallelism) and, optionally, `reduce` dims (a row, folded in
// order). Buffers are read through affine index maps over that space, so
// broadcasting (stride 0), transposes and layouts (permuted strides), slices
// (base offset) cost nothing. Values are scalar expressions (the same
// ScalarNode DAG the op registry defines elementwise ops with), whose Input
// leaves name loads and accumulators.
//
// Semantics, for each point `o` of the outer space, in order:
//   1. for each Reduction k in order: acc[k] = init(k); for each point r of
//      the reduce space (row-major): acc[k] = combine(acc[k], value_k(o, r))
//      where value_k may read loads at (o, r) and acc[j] for j < k;
//   2. for each Store with scope Element: for each r: buf[map(o, r)] = value
//      (or += value at a gathered row: a scatter-add, below); values may
//      read loads at (o, r) and every acc;
//   3. for each Store with scope Row: buf[map(o)] = value, reading accs and
//      loads that do not depend on r;
//   4. for each Global g: global[g] = combine(global[g], rowValue_g(o)).
// Before the outer loop, `prologue` globals are folded over all outer points
// (reading row-invariant loads only; e.g. the count of non-ignored labels a
// mean needs); after it, Final stores write single elements from globals.
// A kernel without reduce dims has no Reductions and Element stores run once
// per outer point.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/scalar_expr.h"
#include "ir/types.h"

namespace kfuse::kernel {

// A buffer the kernel reads or writes (an operand or result of the fused
// node), in its storage dtype; arithmetic happens in computeType(dtype).
struct Buffer {
  std::string name;  // "in0", "out1": for printing and generated code
  TensorType type;
  bool output = false;
};

// Element offset = base + sum over iteration dims d of strides[d] * i[d],
// dims numbered outer first, then reduce.
struct IndexMap {
  int64_t base = 0;
  std::vector<int64_t> strides;

  bool dependsOn(size_t dim) const { return dim < strides.size() && strides[dim] != 0; }
};

// A load's gathered axis (ONNX Gather): its offset also moves `stride`
// elements per unit of a run-time row index, the value of `index` at the
// point (an i64 expression of iteration indices and loads that are not
// gathered themselves). A negative index counts from the end (+ `size`);
// one still outside [0, size) is clamped into it (gatheredRow), so that a
// generated kernel never reads outside its buffer, whatever its input (the
// graph interpreter and reference ops report such an index instead).
struct Gathered {
  ScalarRef index;
  int64_t stride = 0;
  int64_t size = 1;
};

// The row a gathered load reads for `index`.
int64_t gatheredRow(int64_t index, int64_t size);

struct Load {
  int buffer = 0;
  IndexMap map;
  std::optional<Gathered> gathered;  // offset += gathered->stride * gatheredRow(index)
};

enum class Combiner : uint8_t { Sum, Max, Min };
std::string_view combinerName(Combiner c);
double combinerInit(Combiner c);  // 0, -inf, +inf

// Scalar leaves: ScalarOp::Input with index i reads
//   i < loads.size():                       loads[i]
//   i - loads.size() < reductions.size():   the accumulator of that reduction
//   then the globals (prologue ones first, in order).
// ScalarOp::Index with input = d is iteration dim d as an i64.
struct Reduction {
  Combiner combiner = Combiner::Sum;
  ScalarRef value;
};

enum class StoreScope : uint8_t { Element, Row, Final };

// A scatter-add (the gradient of a gather) is an accumulating Element
// store with a gathered row: buf[map(o, r) + stride * row] += value, read
// and rounded to the buffer's dtype at each point, the points of an outer
// point in row order. Its outer points must write disjoint elements (its
// map spans every outer dim), so that they may run in any order or in
// parallel; two rows of one outer point may pick the same row.
struct Store {
  int buffer = 0;
  IndexMap map;  // Row stores: reduce strides are 0; Final stores: all 0
  StoreScope scope = StoreScope::Element;
  ScalarRef value;
  std::optional<Gathered> gathered;  // Element stores only, with `accumulate`
  bool accumulate = false;           // buf += value (a scatter-add)
};

struct Global {
  Combiner combiner = Combiner::Sum;
  ScalarRef value;  // per outer point; may read row-invariant loads and accumulators
};

struct Kernel {
  std::string name;
  std::vector<Buffer> buffers;
  Shape outer;
  Shape reduce;  // empty: no reduction
  std::vector<Load> loads;
  std::vector<Reduction> reductions;
  std::vector<Global> prologue;  // folded before the main loop
  std::vector<Global> globals;   // folded during it
  std::vector<Store> stores;

  size_t numDims() const { return outer.size() + reduce.size(); }
  // Every iteration dim's extent, outer then reduce: what index maps walk.
  Shape space() const {
    Shape s = outer;
    s.insert(s.end(), reduce.begin(), reduce.end());
    return s;
  }
  int64_t outerPoints() const { return numElements(outer); }
  int64_t reducePoints() const { return numElements(reduce); }
  // Index of the first accumulator / global among the Input leaves.
  size_t firstAccumulator() const { return loads.size(); }
  size_t firstGlobal() const { return loads.size() + reductions.size(); }
};

// Whether some store of `k` accumulates (a scatter-add): its row points
// must then run one after the other.
bool scatters(const Kernel& k);

// Whether load `i` reads a different element as iteration dim `dim` moves:
// through its map, or through its gathered index (which reads other loads
// and indices).
bool loadDependsOn(const Kernel& k, size_t i, size_t dim);
// Whether load `i` depends on some reduce dim: it reads another element at
// each point of a row, rather than one per outer point.
bool loadReadsRow(const Kernel& k, size_t i);

// Human-readable text of a kernel (kfuse opt --print-kernels).
std::string printKernel(const Kernel& k);

// Structural checks: buffer and load indices in range, index maps of the
// right rank that stay inside their buffers (with every row of a gathered
// load), leaves that exist, gathered indices that read neither
// accumulators, globals nor gathered loads, Row and Final stores that do
// not read row-dependent loads. Errors name the kernel.
Status verifyKernel(const Kernel& k);

}  // namespace kfuse::kernel
