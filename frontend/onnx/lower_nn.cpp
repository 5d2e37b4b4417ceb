// Neural-network layers: convolution, pooling, normalisation, dropout and
// softmax. kfuse's conv2d and pooling ops are 2-D; 1-D ONNX nodes are lowered
// through them with a unit height (unsqueeze, 2-D op, squeeze).
#include <algorithm>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"

namespace kfuse::onnx_import {
namespace {

// ---------------------------------------------------------------- windows

// Window geometry of Conv / MaxPool / AveragePool over 1 or 2 spatial axes,
// with ONNX's auto_pad resolved into explicit pads.
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // ONNX order: all begins, then all ends
};

Expected<std::vector<int64_t>> listAttr(LoweringContext& c, const std::string& name, size_t n, int64_t def) {
  KF_ASSIGN_OR_RETURN(auto v, c.attrs().getInts(name, std::vector<int64_t>(n, def)));
  if (v.size() != n) return Error(str("attribute ", name, " has ", v.size(), " values, expected ", n));
  return v;
}

Expected<Window> readWindow(LoweringContext& c, const Shape& spatial, std::vector<int64_t> kernel, bool dilated) {
  size_t n = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  KF_ASSIGN_OR_RETURN(w.strides, listAttr(c, "strides", n, 1));
  w.dilations.assign(n, 1);
  if (dilated) {
    KF_ASSIGN_OR_RETURN(w.dilations, listAttr(c, "dilations", n, 1));
  }
  KF_ASSIGN_OR_RETURN(w.pads, listAttr(c, "pads", 2 * n, 0));
  KF_ASSIGN_OR_RETURN(std::string autoPad, c.attrs().getString("auto_pad", "NOTSET"));
  for (size_t i = 0; i < n; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1)
      return Error(str("kernel, strides and dilations must be positive, got kernel ", formatDims(w.kernel),
                       " strides ", formatDims(w.strides), " dilations ", formatDims(w.dilations)));
  if (autoPad == "NOTSET") return w;
  if (autoPad == "VALID") {
    w.pads.assign(2 * n, 0);
    return w;
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return Error(str("attribute auto_pad = \"", autoPad, "\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
  // SAME: output = ceil(input / stride); the odd pad goes at the end (UPPER)
  // or the beginning (LOWER).
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
    int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total = std::max<int64_t>((out - 1) * w.strides[i] + span - spatial[i], 0);
    int64_t small = total / 2, large = total - small;
    w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
    w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
  }
  return w;
}

// The image's spatial extents, checking that it has 1 or 2 of them.
Expected<Shape> spatialDims(LoweringContext& c, const Value* x) {
  if (x->type().rank() < 3)
    return Error(str("input must be [N, C, spatial...], got ", formatType(x->type())));
  if (x->type().rank() > 4)
    return c.unsupported(str(c.opType(), " over ", x->type().rank() - 2, " spatial axes (kfuse has 1-D and 2-D)"));
  return Shape(x->type().shape.begin() + 2, x->type().shape.end());
}

// 2-D attributes of kfuse's window ops: a 1-D window gets a unit height.
AttrMap windowAttrs(const Window& w, bool withKernel, bool withDilations) {
  bool oneD = w.kernel.size() == 1;
  auto two = [&](const std::vector<int64_t>& v, int64_t unit) {
    return oneD ? std::vector<int64_t>{unit, v[0]} : v;
  };
  std::vector<int64_t> pads = oneD ? std::vector<int64_t>{0, w.pads[0], 0, w.pads[1]} : w.pads;
  AttrMap a{{"strides", Attribute(two(w.strides, 1))}, {"pads", Attribute(pads)}};
  if (withKernel) a["kernel"] = Attribute(two(w.kernel, 1));
  if (withDilations) a["dilations"] = Attribute(two(w.dilations, 1));
  return a;
}

// Applies a 2-D kfuse op to x (and other operands) of rank 3 or 4: 1-D
// inputs get a unit height axis for the op, removed afterwards.
Expected<Value*> windowOp(LoweringContext& c, std::string_view op, std::vector<Value*> operands, AttrMap attrs) {
  bool oneD = operands[0]->type().rank() == 3;
  if (oneD)
    for (size_t i = 0; i < operands.size() && i < 2; ++i) {
      KF_ASSIGN_OR_RETURN(operands[i], c.build("unsqueeze", {operands[i]}, {{"axes", Attribute(std::vector<int64_t>{2})}}));
    }
  KF_ASSIGN_OR_RETURN(Value* y, c.build(op, operands, std::move(attrs)));
  if (!oneD) return y;
  return c.build("squeeze", {y}, {{"axes", Attribute(std::vector<int64_t>{2})}});
}

// ---------------------------------------------------------------- conv, pool

Status lowerConv(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* w, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operands"));
  KF_ASSIGN_OR_RETURN(Shape spatial, spatialDims(c, x));
  if (w->type().rank() != x->type().rank())
    return Error(str("weight ", formatType(w->type()), " and input ", formatType(x->type()), " differ in rank"));
  std::vector<int64_t> wKernel(w->type().shape.begin() + 2, w->type().shape.end());
  KF_ASSIGN_OR_RETURN(auto kernel, c.attrs().getInts("kernel_shape", wKernel));
  if (kernel != wKernel)
    return Error(str("attribute kernel_shape = ", formatDims(kernel), " differs from the weight's ", formatDims(wKernel)));
  KF_ASSIGN_OR_RETURN(Window win, readWindow(c, spatial, kernel, true));
  KF_ASSIGN_OR_RETURN(int64_t group, c.attrs().getInt("group", 1));
  AttrMap attrs = windowAttrs(win, false, true);
  attrs["groups"] = Attribute(group);
  std::vector<Value*> operands{x, w};
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(Value* b, c.input(2));
    operands.push_back(b);
  }
  KF_ASSIGN_OR_RETURN(Value* y, windowOp(c, "conv2d", operands, attrs));
  return done(c, y);
}

// kfuse's pools need every window to overlap the input (pads smaller than
// the window), as PyTorch does; ONNX allows larger pads.
Status checkPoolPads(LoweringContext& c, const Window& w) {
  size_t n = w.kernel.size();
  for (size_t i = 0; i < n; ++i) {
    int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
    if (w.pads[i] >= span || w.pads[i + n] >= span)
      return c.unsupported(str(c.opType(), " with pads ", formatDims(w.pads), " not smaller than the window ",
                               formatDims(w.kernel)));
  }
  return Status::ok();
}

// MaxPool of 8-bit integers (opset 12) runs in f64, where they are exact.
Status lowerPool(LoweringContext& c) {
  bool isMax = c.opType() == "MaxPool";
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  DType dtype = x->type().dtype;
  if (isMax && (dtype == DType::I8 || dtype == DType::U8)) {
    KF_ASSIGN_OR_RETURN(x, castTo(c, x, DType::F64));
  }
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(Shape spatial, spatialDims(c, x));
  if (c.hasOutput(1)) return c.unsupported("MaxPool's Indices output");
  KF_ASSIGN_OR_RETURN(auto kernel, c.attrs().getInts("kernel_shape"));
  if (kernel.size() != spatial.size())
    return Error(str("attribute kernel_shape = ", formatDims(kernel), " does not match the input's ", spatial.size(),
                     " spatial axes"));
  // AveragePool has dilations since opset 19; kfuse's avg_pool2d has none.
  bool dilated = isMax ? c.version() >= 10 : c.version() >= 19;
  KF_ASSIGN_OR_RETURN(Window win, readWindow(c, spatial, kernel, dilated));
  if (!isMax && std::any_of(win.dilations.begin(), win.dilations.end(), [](int64_t d) { return d != 1; }))
    return c.unsupported(str("AveragePool with dilations ", formatDims(win.dilations)));
  KF_RETURN_IF_ERROR(checkPoolPads(c, win));
  KF_ASSIGN_OR_RETURN(int64_t ceilMode, c.attrs().getInt("ceil_mode", 0));
  AttrMap attrs = windowAttrs(win, true, isMax);
  attrs["ceil_mode"] = ceilMode != 0;
  if (isMax) {
    // storage_order only changes how the Indices output counts.
    c.attrs().ignore("storage_order");
  } else {
    KF_ASSIGN_OR_RETURN(int64_t includePad, c.attrs().getInt("count_include_pad", 0));
    attrs["count_include_pad"] = includePad != 0;
  }
  KF_ASSIGN_OR_RETURN(Value* y, windowOp(c, isMax ? "max_pool2d" : "avg_pool2d", {x}, attrs));
  KF_ASSIGN_OR_RETURN(y, castTo(c, y, dtype));
  return done(c, y);
}

Status lowerGlobalPool(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  if (x->type().rank() < 3) return Error(str("input must be [N, C, spatial...], got ", formatType(x->type())));
  bool isAvg = c.opType() == "GlobalAveragePool";
  if (isAvg && x->type().rank() == 4) {
    KF_ASSIGN_OR_RETURN(Value* y, c.build("global_avg_pool2d", {x}));
    return done(c, y);
  }
  std::vector<int64_t> axes;
  for (size_t a = 2; a < x->type().rank(); ++a) axes.push_back(static_cast<int64_t>(a));
  KF_ASSIGN_OR_RETURN(Value* y, c.build(isAvg ? "reduce_mean" : "reduce_max", {x},
                                        {{"axes", Attribute(axes)}, {"keepdims", true}}));
  return done(c, y);
}

// ---------------------------------------------------------------- normalisation

// BatchNormalization in training mode (see batchNormTraining):
// normalised with the batch's statistics; the optional outputs are the
// updated running statistics, momentum * running + (1 - momentum) * batch
// (the batch's population variance, as the ONNX spec says).
//
// torch.onnx.export in training mode leaves those outputs unread: it removes
// the in-place update of the module's running_mean / running_var buffers
// (exported as initializers). When an initializer's output is unread, the
// update becomes a state update of that parameter, computed as torch updates
// its buffers (unbiased batch variance; the same as kfuse's own training
// pipeline and tracer), so training the imported model keeps them as
// torch.nn.BatchNorm*d.train() does.
Status lowerBatchNormTraining(LoweringContext& c, const std::vector<Value*>& in, double eps) {
  KF_ASSIGN_OR_RETURN(double momentum, c.attrs().getFloat("momentum", 0.9));
  KF_ASSIGN_OR_RETURN(auto ys, c.buildMulti("batch_norm_train", {in[0], in[1], in[2]}, {{"epsilon", eps}}));
  c.setOutput(0, ys[0]);
  c.setOutput(3, ys[1]);  // saved_mean (opsets before 14): the batch mean
  if (c.hasOutput(4)) {   // saved_var, unread (lowerBatchNorm refuses a read one): the batch variance
    c.setOutput(4, ys[2]);
  }
  const TensorType& x = in[0]->type();
  double count = static_cast<double>(x.numElements()) / static_cast<double>(x.shape[1]);
  for (size_t i = 1; i <= 2; ++i) {
    bool read = c.isOutputConsumed(i);
    Value* running = in[i + 2];
    Value* batch = ys[i];
    if (i == 2 && !read && count > 1) {
      KF_ASSIGN_OR_RETURN(batch, c.build("mul", {batch, scalarLike(c, batch, count / (count - 1))}));
    }
    KF_ASSIGN_OR_RETURN(Value* kept, c.build("mul", {running, scalarLike(c, running, momentum)}));
    KF_ASSIGN_OR_RETURN(Value* fresh, c.build("mul", {batch, scalarLike(c, running, 1.0 - momentum)}));
    KF_ASSIGN_OR_RETURN(Value* updated, c.build("add", {kept, fresh}));
    c.setOutput(i, updated);
    KF_ASSIGN_OR_RETURN(Value* raw, c.input(i + 2));
    // Only when not cast to the input's type: the update has the parameter's type.
    if (!read && raw->type() == updated->type()) (void)c.updateInitializer(i + 2, updated);
  }
  return Status::ok();
}

// Whether a BatchNormalization runs in training mode, one rule per range
// of versions:
//   6:      the is_test attribute (default 0: training);
//   7-13:   ONNX's "output case #1": a node with running-statistics
//           outputs (Y, mean, var, saved_mean, saved_var) trains, Y alone
//           is inference. torch.onnx.export in training mode at opsets 9-13
//           gives all five outputs, reading none;
//   14, 15: the training_mode attribute; statistics outputs without it are
//           invalid.
Expected<bool> batchNormTraining(LoweringContext& c) {
  bool statsOut = false;
  for (size_t i = 1; i < c.numOutputs(); ++i) statsOut |= c.hasOutput(i);
  if (c.version() < 7) {
    KF_ASSIGN_OR_RETURN(int64_t isTest, c.attrs().getInt("is_test", 0));
    if (isTest && statsOut) return Error("is_test = 1 with running-statistics outputs (they exist in training only)");
    return isTest == 0;
  }
  if (c.version() < 14) return statsOut;
  KF_ASSIGN_OR_RETURN(int64_t training, c.attrs().getInt("training_mode", 0));
  if (!training && statsOut)
    return Error("running_mean / running_var outputs with training_mode = 0 (they exist in training only)");
  return training != 0;
}

Status lowerBatchNorm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(double eps, c.attrs().getFloat("epsilon", 1e-5));
  KF_ASSIGN_OR_RETURN(int64_t spatial, c.attrs().getInt("spatial", 1));
  c.attrs().ignore("consumed_inputs");
  KF_ASSIGN_OR_RETURN(bool training, batchNormTraining(c));
  if (!spatial) return c.unsupported("BatchNormalization with spatial = 0");
  // saved_var: the spec says "saved variance", but runtimes disagree on what
  // it holds (Caffe2, cuDNN and onnxruntime keep 1 / sqrt(var + epsilon));
  // no exporter reads it. saved_mean is the batch mean everywhere.
  if (c.version() < 14 && c.isOutputConsumed(4))
    return c.unsupported("BatchNormalization's saved_var output read by the graph (runtimes disagree on whether "
                         "it is the batch variance or 1 / sqrt(variance + epsilon))");
  std::vector<Value*> operands{x};
  for (size_t i = 1; i <= 4; ++i) {
    KF_ASSIGN_OR_RETURN(Value* v, c.input(i));
    KF_ASSIGN_OR_RETURN(v, castTo(c, v, x->type().dtype));
    operands.push_back(v);
  }
  c.markBuffer(3);
  c.markBuffer(4);
  if (training) return lowerBatchNormTraining(c, operands, eps);
  c.attrs().ignore("momentum");  // updates running statistics in training only
  KF_ASSIGN_OR_RETURN(Value* y, c.build("batch_norm", operands, {{"epsilon", eps}}));
  return done(c, y);
}

// Per-channel scale and bias [C] applied to x [N, C, ...].
Expected<Value*> scaleChannels(LoweringContext& c, Value* y, Value* scale, Value* bias) {
  Shape perChannel(y->type().rank() - 1, 1);
  perChannel[0] = y->type().shape[1];
  KF_ASSIGN_OR_RETURN(Value* s, reshapeTo(c, scale, perChannel));
  KF_ASSIGN_OR_RETURN(Value* b, reshapeTo(c, bias, perChannel));
  KF_ASSIGN_OR_RETURN(y, c.build("mul", {y, s}));
  return c.build("add", {y, b});
}

// InstanceNormalization: each (n, c) plane normalised over its spatial axes
// (layer_norm from axis 2), then the per-channel scale and bias.
Status lowerInstanceNorm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* scale, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* bias, c.input(2));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(double eps, c.attrs().getFloat("epsilon", 1e-5));
  if (x->type().rank() < 3) return Error(str("input must be [N, C, spatial...], got ", formatType(x->type())));
  Shape channels{x->type().shape[1]};
  if (scale->type().shape != channels || bias->type().shape != channels)
    return Error(str("scale ", formatType(scale->type()), " and B ", formatType(bias->type()), " must be [",
                     channels[0], "]"));
  KF_ASSIGN_OR_RETURN(Value* n, c.build("layer_norm", {x}, {{"axis", int64_t{2}}, {"epsilon", eps}}));
  KF_ASSIGN_OR_RETURN(Value* y, scaleChannels(c, n, scale, bias));
  return done(c, y);
}

// LayerNormalization's optional outputs: the mean and 1 / sqrt(variance +
// epsilon) over axes [axis, rank), kept as extent-1 axes, in stash_type.
Status layerNormStatistics(LoweringContext& c, Value* x, int64_t axis, double eps, int64_t stash) {
  auto dtype = dtypeFromOnnx(static_cast<int>(stash));
  if (!dtype || !isFloat(*dtype)) return c.unsupported(str("LayerNormalization with stash_type ", stash));
  std::vector<int64_t> axes;
  for (auto a = axis; a < static_cast<int64_t>(x->type().rank()); ++a) axes.push_back(a);
  AttrMap reduce{{"axes", Attribute(axes)}, {"keepdims", true}};
  KF_ASSIGN_OR_RETURN(Value* xs, castTo(c, x, *dtype));
  KF_ASSIGN_OR_RETURN(Value* mean, c.build("reduce_mean", {xs}, reduce));
  KF_ASSIGN_OR_RETURN(Value* d, c.build("sub", {xs, mean}));
  KF_ASSIGN_OR_RETURN(Value* sq, c.build("mul", {d, d}));
  KF_ASSIGN_OR_RETURN(Value* var, c.build("reduce_mean", {sq}, reduce));
  KF_ASSIGN_OR_RETURN(Value* shifted, c.build("add", {var, scalarLike(c, var, eps)}));
  KF_ASSIGN_OR_RETURN(Value* inv, c.build("rsqrt", {shifted}));
  c.setOutput(1, mean);
  c.setOutput(2, inv);
  return Status::ok();
}

// LayerNormalization: kfuse's layer_norm when scale and bias have exactly
// the normalised shape; otherwise (ONNX lets them broadcast) as mul and add.
Status lowerLayerNorm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* scale, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(double eps, c.attrs().getFloat("epsilon", 1e-5));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", -1));
  // stash_type is the type of Mean and InvStdDev and of the statistics
  // Y is computed from; kfuse's layer_norm computes them in double, at
  // least as precisely as any choice.
  KF_ASSIGN_OR_RETURN(int64_t stash, c.attrs().getInt("stash_type", 1));
  auto rank = static_cast<int64_t>(x->type().rank());
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  if (c.hasOutput(1) || c.hasOutput(2)) KF_RETURN_IF_ERROR(layerNormStatistics(c, x, axis, eps, stash));
  Shape inner(x->type().shape.begin() + axis, x->type().shape.end());
  std::vector<Value*> operands{x};
  Value* bias = nullptr;
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(bias, c.input(2));
  }
  bool exact = scale->type().shape == inner && (!bias || bias->type().shape == inner);
  if (exact) {
    operands.push_back(scale);
    if (bias) operands.push_back(bias);
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("layer_norm", operands, {{"axis", axis}, {"epsilon", eps}}));
  if (!exact) {
    KF_ASSIGN_OR_RETURN(y, c.build("mul", {y, scale}));
    if (bias) {
      KF_ASSIGN_OR_RETURN(y, c.build("add", {y, bias}));
    }
    if (y->type().shape != x->type().shape)
      return Error(str("scale or bias does not broadcast to the input ", formatType(x->type())));
  }
  return done(c, y);
}

// LRN: x / (bias + alpha / size * sum of x^2 over `size` neighbouring
// channels)^beta. The channel-window sum is an average pool (padding
// counted, so the divisor is always `size`) over x^2 viewed as [N, 1, C, H*W].
Status lowerLRN(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(int64_t size, c.attrs().getInt("size"));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1e-4));
  KF_ASSIGN_OR_RETURN(double beta, c.attrs().getFloat("beta", 0.75));
  KF_ASSIGN_OR_RETURN(double bias, c.attrs().getFloat("bias", 1.0));
  const Shape& s = x->type().shape;
  if (s.size() < 3 || size < 1) return Error(str("LRN needs [N, C, ...] input and size >= 1"));
  int64_t plane = 1;
  for (size_t i = 2; i < s.size(); ++i) plane *= s[i];
  KF_ASSIGN_OR_RETURN(Value* sq, c.build("mul", {x, x}));
  KF_ASSIGN_OR_RETURN(sq, reshapeTo(c, sq, {s[0], 1, s[1], plane}));
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  KF_ASSIGN_OR_RETURN(Value* avg, c.build("avg_pool2d", {sq}, {{"kernel", Attribute(std::vector<int64_t>{size, 1})},
                                                              {"strides", Attribute(std::vector<int64_t>{1, 1})},
                                                              {"pads", Attribute(std::vector<int64_t>{before, 0, after, 0})},
                                                              {"count_include_pad", true}}));
  KF_ASSIGN_OR_RETURN(avg, reshapeTo(c, avg, s));
  KF_ASSIGN_OR_RETURN(Value* d, c.build("mul", {avg, scalarLike(c, x, alpha)}));
  KF_ASSIGN_OR_RETURN(d, c.build("add", {d, scalarLike(c, x, bias)}));
  KF_ASSIGN_OR_RETURN(d, c.build("pow", {d, scalarLike(c, x, beta)}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("div", {x, d}));
  return done(c, y);
}

// ---------------------------------------------------------------- dropout, softmax

// A dropout node's seed: its `seed` attribute (opset 12 on) when given,
// else FNV-1a of its name, so that each node draws its own masks and the
// same model always draws the same ones.
Expected<int64_t> dropoutSeed(LoweringContext& c) {
  if (c.version() >= 12 && c.attrs().has("seed")) return c.attrs().getInt("seed");
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : c.nodeName()) h = (h ^ ch) * 0x100000001b3ull;
  return static_cast<int64_t>(h);
}

// Whether the node drops in training mode, and its ratio:
//   6:      the is_test attribute (default 0: training) and the ratio attribute;
//   7, 10:  no mode in the model (ONNX leaves it to the runtime): inference,
//           as onnxruntime runs them;
//   12 on:  the training_mode input (default false) and the ratio input
//           (default 0.5), both known at import.
struct DropoutMode {
  bool training = false;
  double ratio = 0.5;
};

Expected<DropoutMode> dropoutMode(LoweringContext& c) {
  DropoutMode m;
  if (c.version() < 7) {
    KF_ASSIGN_OR_RETURN(int64_t isTest, c.attrs().getInt("is_test", 0));
    KF_ASSIGN_OR_RETURN(m.ratio, c.attrs().getFloat("ratio", 0.5));
    m.training = isTest == 0;
  } else if (c.version() < 12) {
    c.attrs().ignore("ratio");
  } else if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(Tensor mode, c.constantInput(2));
    if (mode.numElements() != 1)
      return Error(str("input 2 (training_mode) must be one boolean, got ", formatType(mode.type())));
    m.training = mode.at(0) != 0;
    if (m.training && c.hasInput(1)) {
      KF_ASSIGN_OR_RETURN(Tensor ratio, c.constantInput(1));
      if (ratio.numElements() != 1 || !isFloat(ratio.dtype()))
        return Error(str("input 1 (ratio) must be one floating-point number, got ", formatType(ratio.type())));
      m.ratio = ratio.at(0);
    }
  }
  if (m.training && !(m.ratio >= 0 && m.ratio < 1))
    return Error(str("ratio = ", m.ratio, " must be in [0, 1)"));
  return m;
}

// Dropout. At inference (and with ratio 0) the identity, its mask all true.
// In training mode kfuse's dropout op: y = x / (1 - ratio) where kept, 0
// elsewhere, the mask a Philox4x32-10 draw from (seed, step, element index)
// (ir/philox.h). The imported function draws with step 0; a training step
// built from it (kfuse train) draws a fresh mask every step, as dropouts
// of kfuse's own traced models do (passes/training.cpp).
Status lowerDropout(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  c.attrs().ignore("consumed_inputs");
  KF_ASSIGN_OR_RETURN(DropoutMode mode, dropoutMode(c));
  KF_ASSIGN_OR_RETURN(int64_t seed, dropoutSeed(c));
  // The mask is bool since opset 10, x's type before.
  DType maskType = c.version() < 10 ? x->type().dtype : DType::Bool;
  if (!mode.training || mode.ratio == 0) {
    c.setOutput(0, x);
    if (c.hasOutput(1)) {
      KF_ASSIGN_OR_RETURN(Value* mask, c.build("expand", {c.constant(Tensor::scalar(maskType, 1))},
                                               {{"shape", Attribute(x->type().shape)}}));
      c.setOutput(1, mask);
    }
    return Status::ok();
  }
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  AttrMap attrs{{"ratio", mode.ratio}, {"seed", seed}};
  // Only a mask something reads is computed with y. An unread one (PyTorch's
  // exports never read theirs) comes from a node of its own that DCE removes.
  bool maskRead = c.isOutputConsumed(1);
  attrs["mask"] = maskRead;
  KF_ASSIGN_OR_RETURN(auto ys, c.buildMulti("dropout", {x}, attrs));
  c.setOutput(0, ys[0]);
  if (!c.hasOutput(1)) return Status::ok();
  if (!maskRead) {
    attrs["mask"] = true;
    KF_ASSIGN_OR_RETURN(ys, c.buildMulti("dropout", {x}, attrs));
  }
  KF_ASSIGN_OR_RETURN(Value* mask, castTo(c, ys[1], maskType));
  c.setOutput(1, mask);
  return Status::ok();
}

// Softmax and LogSoftmax. Before opset 13 they normalise over all axes from
// `axis` (default 1) on, as if the input were flattened to 2-D there; since
// 13 over the one axis (default -1).
Status lowerSoftmax(LoweringContext& c) {
  std::string_view op = c.opType() == "Softmax" ? "softmax" : "log_softmax";
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  bool coerce2d = c.version() < 13;
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", coerce2d ? 1 : -1));
  auto rank = static_cast<int64_t>(x->type().rank());
  if (rank == 0) return Error("input must have rank >= 1");
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  if (!coerce2d || axis == rank - 1) {
    KF_ASSIGN_OR_RETURN(Value* y, c.build(op, {x}, {{"axis", axis}}));
    return done(c, y);
  }
  const Shape& s = x->type().shape;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
  KF_ASSIGN_OR_RETURN(Value* flat, reshapeTo(c, x, {outer, inner}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build(op, {flat}, {{"axis", int64_t{1}}}));
  KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, s));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Conv", {1, 11, 22}, lowerConv, "conv2d (1-D: unsqueeze + conv2d + squeeze)"},
    {"MaxPool", {1, 8, 10, 11, 12, 22}, lowerPool, "max_pool2d (1-D through unsqueeze/squeeze)"},
    {"AveragePool", {1, 7, 10, 11, 19, 22}, lowerPool, "avg_pool2d (1-D through unsqueeze/squeeze)"},
    {"GlobalAveragePool", {1, 22}, lowerGlobalPool, "global_avg_pool2d (rank 4) or reduce_mean"},
    {"GlobalMaxPool", {1, 22}, lowerGlobalPool, "reduce_max"},
    {"BatchNormalization", {6, 7, 9, 14, 15}, lowerBatchNorm,
     "batch_norm (training mode: batch_norm_train + running-stat updates; from training_mode since 14, the "
     "statistics outputs in 7-13, is_test in 6)"},
    {"InstanceNormalization", {6, 22}, lowerInstanceNorm, "layer_norm + mul + add"},
    {"LayerNormalization", {17}, lowerLayerNorm, "layer_norm (Mean, InvStdDev: reduce_mean + sub + mul + reduce_mean + add + rsqrt)"},
    {"LRN", {1, 13}, lowerLRN, "mul + avg_pool2d + mul + add + pow + div"},
    {"Dropout", {6, 7, 10, 12, 13, 22}, lowerDropout,
     "nothing (inference); training mode: dropout (Philox mask from seed, step and element)"},
    {"Softmax", {1, 11, 13}, lowerSoftmax, "softmax (opset < 13: reshape + softmax + reshape)"},
    {"LogSoftmax", {1, 11, 13}, lowerSoftmax, "log_softmax (opset < 13: reshape + log_softmax + reshape)"},
};

}  // namespace

std::span<const OpLowering> nnLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
