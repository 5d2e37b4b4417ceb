// Resize (opsets 11, 13, 18 and 19: axes, aspect-ratio policies,
// antialiasing, half_pixel_symmetric) and Upsample (7, 9): nearest, linear
// and cubic interpolation, all coordinate transformation modes.
// Interpolation is separable: each resized axis becomes gathers of its n
// neighbours (1, 2 or 4; more when antialiasing widens the filter to cover
// the input a downscaled output position spans) with index vectors
// computed at import (shapes are static), weighted by constant coefficient
// vectors and summed. The neighbour and coefficient rules follow ONNX's
// reference implementation (onnx/backend/test/case/node/resize.py).
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

struct ResizeAttrs {
  std::string mode, transform, nearestMode;
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false;
  bool antialias = false;  // linear and cubic: a filter widened by 1/scale when downscaling
};

// Interpolation along one axis: for every output position, its neighbours'
// input indices (clamped: the input is edge-padded) and their weights.
struct AxisPlan {
  std::vector<std::vector<int64_t>> index;  // [neighbour][output position]
  std::vector<std::vector<double>> weight;  // same
  std::vector<bool> outside;                // tf_crop_and_resize: position maps outside the input
};

// The number of neighbours an output position reads along an axis scaled
// by `scale` (fixed per axis).
size_t neighbours(const ResizeAttrs& a, double scale) {
  if (a.mode == "nearest") return 2;
  if (!a.antialias) return a.mode == "cubic" ? 4 : 2;
  double s = std::min(scale, 1.0), support = a.mode == "cubic" ? 2.0 : 1.0;
  auto start = static_cast<int64_t>(std::floor(-support / s) + 1);
  return static_cast<size_t>(2 - 2 * start);
}

// Antialiased weights (ONNX's reference): the filter evaluated at the
// neighbours' distances times the scale, normalised to sum 1.
std::vector<double> antialiasCoefficients(const ResizeAttrs& a, double ratio, double scale, size_t n) {
  double s = std::min(scale, 1.0), A = a.cubicA;
  auto start = 1 - static_cast<int64_t>(n / 2);
  std::vector<double> w;
  double total = 0;
  for (size_t k = 0; k < n; ++k) {
    double x = std::abs(s * (static_cast<double>(start + static_cast<int64_t>(k)) - ratio));
    double v = a.mode == "linear" ? std::clamp(1 - x, 0.0, 1.0)
               : x <= 1           ? ((A + 2) * x - (A + 3)) * x * x + 1
               : x < 2            ? ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
                                  : 0.0;
    w.push_back(v);
    total += v;
  }
  for (double& v : w) v /= total;
  return w;
}

std::vector<double> coefficients(const ResizeAttrs& a, double ratio, bool integral, double scale, size_t n) {
  if (a.antialias && a.mode != "nearest") return antialiasCoefficients(a, ratio, scale, n);
  if (a.mode == "nearest") {
    if (integral) return {0, 1};
    const std::string& m = a.nearestMode;
    bool up = m == "round_prefer_floor" ? ratio > 0.5 : m == "round_prefer_ceil" ? ratio >= 0.5 : m == "ceil";
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  if (a.mode == "linear") return {1 - ratio, ratio};
  double A = a.cubicA, r = ratio, s = 1 - ratio;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

// The source coordinate of output position x (ONNX's coordinate
// transformation modes); nullopt for tf_crop_and_resize outside the input.
// As in ONNX's reference, the output width is scale * in, which is not an
// integer when a scale (rather than a size) was given.
std::optional<double> sourceCoordinate(const ResizeAttrs& a, int64_t x, int64_t in, int64_t out, double scale,
                                       double roiBegin, double roiEnd) {
  const std::string& t = a.transform;
  auto xd = static_cast<double>(x);
  double width = scale * static_cast<double>(in);
  if (t == "half_pixel_symmetric") {  // the input's centre stays the output's when out is rounded
    double offset = static_cast<double>(in) / 2 * (1 - static_cast<double>(out) / width);
    return offset + (xd + 0.5) / scale - 0.5;
  }
  if (t == "align_corners") return width == 1 ? 0.0 : xd * static_cast<double>(in - 1) / (width - 1);
  if (t == "asymmetric") return xd / scale;
  if (t == "pytorch_half_pixel") return width == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
  if (t == "half_pixel") return (xd + 0.5) / scale - 0.5;
  if (t == "tf_half_pixel_for_nn") return (xd + 0.5) / scale;
  double span = (roiEnd - roiBegin) * static_cast<double>(in - 1);  // tf_crop_and_resize
  double c = (width == 1 ? span / 2 : xd * span / (width - 1)) + roiBegin * static_cast<double>(in - 1);
  if (c < 0 || c > static_cast<double>(in - 1)) return std::nullopt;
  return c;
}

AxisPlan planAxis(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roiBegin, double roiEnd) {
  size_t n = neighbours(a, scale);
  AxisPlan p;
  p.index.assign(n, std::vector<int64_t>(static_cast<size_t>(out)));
  p.weight.assign(n, std::vector<double>(static_cast<size_t>(out)));
  p.outside.assign(static_cast<size_t>(out), false);
  for (int64_t x = 0; x < out; ++x) {
    auto coord = sourceCoordinate(a, x, in, out, scale, roiBegin, roiEnd);
    if (!coord) {
      p.outside[static_cast<size_t>(x)] = true;
      coord = 0.0;
    }
    double base = std::floor(*coord);
    bool integral = *coord == base;
    std::vector<double> w = coefficients(a, integral ? 1.0 : *coord - base, integral, scale, n);
    // The n neighbours nearest to coord, the lower one on ties: with the
    // weight of ratio 1 at `base`, they start at base - n/2 + (integral).
    auto first = static_cast<int64_t>(base) - static_cast<int64_t>(n / 2) + (integral ? 0 : 1);
    double total = 0;
    for (size_t k = 0; k < n; ++k) {
      int64_t i = first + static_cast<int64_t>(k);
      if (a.excludeOutside && (i < 0 || i >= in)) w[k] = 0;
      total += w[k];
      p.index[k][static_cast<size_t>(x)] = std::clamp<int64_t>(i, 0, in - 1);
    }
    for (size_t k = 0; k < n; ++k) p.weight[k][static_cast<size_t>(x)] = a.excludeOutside ? w[k] / total : w[k];
  }
  return p;
}

Tensor i64Vector(const std::vector<int64_t>& v) {
  Tensor t(TensorType(DType::I64, {static_cast<int64_t>(v.size())}));
  std::copy(v.begin(), v.end(), t.as<int64_t>());
  return t;
}

// Applies one axis's plan: a single gather for nearest, else the weighted
// sum of n gathers (weights broadcast along the axis).
Expected<Value*> resizeAxis(LoweringContext& c, Value* x, int64_t axis, const AxisPlan& p, const ResizeAttrs& a) {
  size_t n = p.index.size();
  auto out = static_cast<int64_t>(p.outside.size());
  Shape along(x->type().rank(), 1);
  along[static_cast<size_t>(axis)] = out;
  Value* y = nullptr;
  for (size_t k = 0; k < n; ++k) {
    if (std::all_of(p.weight[k].begin(), p.weight[k].end(), [](double w) { return w == 0; })) continue;
    if (a.mode == "nearest") {  // exactly one neighbour has weight 1: gather it
      std::vector<int64_t> pick(static_cast<size_t>(out));
      for (size_t x = 0; x < pick.size(); ++x) pick[x] = p.index[p.weight[0][x] == 1 ? 0 : 1][x];
      return c.build("gather", {x, c.constant(i64Vector(pick))}, {{"axis", axis}});
    }
    KF_ASSIGN_OR_RETURN(Value* g, c.build("gather", {x, c.constant(i64Vector(p.index[k]))}, {{"axis", axis}}));
    Value* w = c.constant(Tensor::fromDoubles(TensorType(x->type().dtype, along), p.weight[k]));
    KF_ASSIGN_OR_RETURN(g, c.build("mul", {g, w}));
    if (y) {
      KF_ASSIGN_OR_RETURN(g, c.build("add", {y, g}));
    }
    y = g;
  }
  if (std::find(p.outside.begin(), p.outside.end(), true) != p.outside.end()) {
    Tensor mask(TensorType(DType::Bool, along));
    for (size_t i = 0; i < p.outside.size(); ++i) mask.set(static_cast<int64_t>(i), p.outside[i] ? 1 : 0);
    KF_ASSIGN_OR_RETURN(y, c.build("where", {c.constant(std::move(mask)), scalarLike(c, x, a.extrapolation), y}));
  }
  return y;
}

Expected<ResizeAttrs> readAttrs(LoweringContext& c) {
  ResizeAttrs a;
  KF_ASSIGN_OR_RETURN(a.mode, c.attrs().getString("mode", "nearest"));
  KF_ASSIGN_OR_RETURN(a.transform, c.attrs().getString("coordinate_transformation_mode", "half_pixel"));
  KF_ASSIGN_OR_RETURN(a.nearestMode, c.attrs().getString("nearest_mode", "round_prefer_floor"));
  KF_ASSIGN_OR_RETURN(a.cubicA, c.attrs().getFloat("cubic_coeff_a", -0.75));
  KF_ASSIGN_OR_RETURN(a.extrapolation, c.attrs().getFloat("extrapolation_value", 0.0));
  KF_ASSIGN_OR_RETURN(int64_t exclude, c.attrs().getInt("exclude_outside", 0));
  KF_ASSIGN_OR_RETURN(int64_t antialias, c.attrs().getInt("antialias", 0));
  a.excludeOutside = exclude != 0;
  a.antialias = antialias != 0;
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    return Error(str("attribute mode = \"", a.mode, "\" is not nearest, linear or cubic"));
  if (a.antialias && a.mode == "nearest") return Error("antialias applies to linear and cubic modes, not nearest");
  for (const char* t : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
                        "tf_half_pixel_for_nn", "half_pixel_symmetric"})
    if (a.transform == t) return a;
  return c.unsupported(str("Resize with coordinate_transformation_mode \"", a.transform, "\""));
}

// Output shape, scales and roi of a Resize (inputs roi, scales, sizes) or an
// Upsample (scales: attribute in opset 7, input 1 in opset 9).
struct ResizeTarget {
  Shape out;
  std::vector<double> scales, roi;
};

Status fromScales(const Tensor& s, const Shape& in, ResizeTarget& t) {
  if (static_cast<size_t>(s.numElements()) != in.size())
    return Error(str("scales has ", s.numElements(), " values for an input of rank ", in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    t.scales[i] = s.at(static_cast<int64_t>(i));
    if (!(t.scales[i] > 0)) return Error(str("scale ", t.scales[i], " must be positive"));
    t.out[i] = static_cast<int64_t>(t.scales[i] * static_cast<double>(in[i]));
  }
  return Status::ok();
}

// Resize-18's `axes`: scales, sizes and roi name those axes only; the others
// keep their extent (scale 1, roi [0, 1]).
struct AxisList {
  std::vector<int64_t> axes;  // normalised, in the given order
  bool all = true;
};

Expected<AxisList> readAxes(LoweringContext& c, size_t rank) {
  AxisList l;
  KF_ASSIGN_OR_RETURN(auto axes, c.attrs().getInts("axes", std::vector<int64_t>{}));
  l.all = axes.empty();
  if (l.all)
    for (size_t d = 0; d < rank; ++d) l.axes.push_back(static_cast<int64_t>(d));
  for (int64_t a : axes) {
    KF_ASSIGN_OR_RETURN(int64_t n, normalizedAxis(a, static_cast<int64_t>(rank), "attribute axes"));
    if (std::find(l.axes.begin(), l.axes.end(), n) != l.axes.end()) return Error("attribute axes repeats an axis");
    l.axes.push_back(n);
  }
  return l;
}

// Values given per listed axis, spread over all axes (`fill` elsewhere).
Expected<std::vector<double>> perAxis(const Tensor& t, const AxisList& l, size_t rank, double fill, const char* what) {
  if (static_cast<size_t>(t.numElements()) != l.axes.size())
    return Error(str(what, " has ", t.numElements(), " values for ", l.axes.size(), " resized axes"));
  std::vector<double> v(rank, fill);
  for (size_t i = 0; i < l.axes.size(); ++i) v[static_cast<size_t>(l.axes[i])] = t.at(static_cast<int64_t>(i));
  return v;
}

// Sizes under keep_aspect_ratio_policy: one scale for all listed axes, the
// smallest (not_larger) or largest (not_smaller) of theirs, and sizes
// rounded half up from it.
Status keepAspectRatio(const std::string& policy, const AxisList& l, const Shape& in, ResizeTarget& t) {
  if (policy == "stretch") return Status::ok();
  if (policy != "not_larger" && policy != "not_smaller")
    return Error(str("attribute keep_aspect_ratio_policy = \"", policy, "\" is not stretch, not_larger or not_smaller"));
  double scale = t.scales[static_cast<size_t>(l.axes[0])];
  for (int64_t a : l.axes)
    scale = policy == "not_larger" ? std::min(scale, t.scales[static_cast<size_t>(a)])
                                   : std::max(scale, t.scales[static_cast<size_t>(a)]);
  for (int64_t a : l.axes) {
    auto d = static_cast<size_t>(a);
    t.scales[d] = scale;
    t.out[d] = static_cast<int64_t>(scale * static_cast<double>(in[d]) + 0.5);
  }
  return Status::ok();
}

Expected<ResizeTarget> upsampleTarget(LoweringContext& c, const Shape& in) {
  ResizeTarget t{in, std::vector<double>(in.size(), 1.0), {}};
  if (c.version() < 9) {
    KF_ASSIGN_OR_RETURN(auto s, c.attrs().getFloats("scales"));
    KF_RETURN_IF_ERROR(
        fromScales(Tensor::fromDoubles(TensorType(DType::F64, {static_cast<int64_t>(s.size())}), s), in, t));
  } else {
    KF_ASSIGN_OR_RETURN(Tensor s, c.constantInput(1));
    KF_RETURN_IF_ERROR(fromScales(s, in, t));
  }
  KF_RETURN_IF_ERROR(checkShapeBounds(t.out, "the resized shape"));
  return t;
}

Expected<ResizeTarget> readTarget(LoweringContext& c, const Shape& in, bool cropAndResize) {
  if (c.opType() == "Upsample") return upsampleTarget(c, in);
  ResizeTarget t{in, std::vector<double>(in.size(), 1.0), {}};
  KF_ASSIGN_OR_RETURN(AxisList axes, readAxes(c, in.size()));
  if (c.hasInput(3)) {
    KF_ASSIGN_OR_RETURN(Tensor sizes, c.constantInput(3));
    KF_ASSIGN_OR_RETURN(auto out, perAxis(sizes, axes, in.size(), -1, "sizes"));
    for (size_t i = 0; i < in.size(); ++i) {
      t.out[i] = out[i] < 0 ? in[i] : static_cast<int64_t>(out[i]);
      t.scales[i] = static_cast<double>(t.out[i]) / static_cast<double>(in[i]);
    }
    KF_ASSIGN_OR_RETURN(std::string policy, c.attrs().getString("keep_aspect_ratio_policy", "stretch"));
    KF_RETURN_IF_ERROR(keepAspectRatio(policy, axes, in, t));
  } else {
    c.attrs().ignore("keep_aspect_ratio_policy");  // applies to sizes only
    KF_ASSIGN_OR_RETURN(Tensor s, c.constantInput(2));
    KF_ASSIGN_OR_RETURN(auto scales, perAxis(s, axes, in.size(), 1.0, "scales"));
    KF_RETURN_IF_ERROR(fromScales(Tensor::fromDoubles(TensorType(DType::F64, {static_cast<int64_t>(in.size())}), scales),
                                  in, t));
  }
  KF_RETURN_IF_ERROR(checkShapeBounds(t.out, "the resized shape"));
  if (cropAndResize) {
    KF_ASSIGN_OR_RETURN(Tensor r, c.constantInput(1));
    size_t n = axes.axes.size();
    if (static_cast<size_t>(r.numElements()) != 2 * n) return Error("roi must have 2 values per resized axis");
    std::vector<double> given = r.toDoubles();
    t.roi.assign(in.size(), 0.0);
    t.roi.resize(2 * in.size(), 1.0);
    for (size_t i = 0; i < n; ++i) {
      t.roi[static_cast<size_t>(axes.axes[i])] = given[i];
      t.roi[in.size() + static_cast<size_t>(axes.axes[i])] = given[n + i];
    }
  }
  return t;
}

// Upsample is Resize with asymmetric coordinates, nearest rounding down.
Status lowerResize(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  ResizeAttrs a;
  if (c.opType() == "Upsample") {
    KF_ASSIGN_OR_RETURN(a.mode, c.attrs().getString("mode", "nearest"));
    if (a.mode != "nearest" && a.mode != "linear") return Error(str("attribute mode = \"", a.mode, "\""));
    a.transform = "asymmetric";
    a.nearestMode = "floor";
  } else {
    KF_ASSIGN_OR_RETURN(a, readAttrs(c));
  }
  if (a.mode != "nearest") {
    KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  }
  const Shape& in = x->type().shape;
  KF_ASSIGN_OR_RETURN(ResizeTarget t, readTarget(c, in, a.transform == "tf_crop_and_resize"));
  if (a.transform != "tf_crop_and_resize") c.attrs().ignore("extrapolation_value");
  Value* y = x;
  size_t rank = in.size();
  for (size_t d = 0; d < rank; ++d) {
    if (t.out[d] == in[d] && t.scales[d] == 1.0 && t.roi.empty()) continue;  // the identity along d
    if (in[d] == 0 || t.out[d] == 0) return c.unsupported("Resize of an empty axis");
    AxisPlan p = planAxis(a, in[d], t.out[d], t.scales[d], t.roi.empty() ? 0 : t.roi[d],
                          t.roi.empty() ? 1 : t.roi[d + rank]);
    KF_ASSIGN_OR_RETURN(y, resizeAxis(c, y, static_cast<int64_t>(d), p, a));
  }
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Resize", {11, 13, 18, 19}, lowerResize,
     "per resized axis: gather (nearest) or gathers + mul + add with constant indices and weights"},
    {"Upsample", {7, 9}, lowerResize, "as Resize (asymmetric coordinates, nearest rounding down)"},
};

}  // namespace

std::span<const OpLowering> resizeLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
