"""Reference cases for the data-movement ops (reshape, transpose, expand,
concat, split, slice, squeeze, unsqueeze, flatten, pad, gather, shape_of);
expected values from NumPy, with PyTorch as a second oracle where its API
matches (negative and reflect pads, embedding lookup)."""
import numpy as np
import torch

from casegen import Family, rng

I64_MAX = 2**63 - 1
I64_MIN = -2**63

f = Family("shape")
r = rng(7)
x23 = r.standard_normal((2, 3)).astype(np.float32)
x234 = r.standard_normal((2, 3, 4)).astype(np.float32)
i234 = r.integers(-100, 100, (2, 3, 4)).astype(np.int64)
b23 = r.random((2, 3)) > 0.5
# i64 values beyond 2^53 check that data moves as raw bytes, not as doubles.
big = np.array([[2**62 + 1, -2**60 - 3, 7], [I64_MAX, I64_MIN, 2**53 + 1]], np.int64)


def ints(v):
    """Attribute lists as plain Python ints (casegen formats those only)."""
    return [int(a) for a in v]


# ------------------------------------------------------------ reshape
f.op("reshape", "reshape", {"x": x23}, x23.reshape(3, 2), attrs={"shape": [3, 2]})
f.op("reshape_infer_dim", "reshape", {"x": x234}, x234.reshape(4, -1), attrs={"shape": [4, -1]})
f.op("reshape_infer_first", "reshape", {"x": x234}, x234.reshape(-1, 2, 2), attrs={"shape": [-1, 2, 2]})
f.op("reshape_scalar_to_1", "reshape", {"x": np.array(2.5, np.float32)}, np.array([2.5], np.float32),
     attrs={"shape": [1]})
f.op("reshape_1_to_scalar", "reshape", {"x": np.array([4], np.int64)}, np.array(4, np.int64), attrs={"shape": []})
f.op("reshape_i64_big", "reshape", {"x": big}, big.reshape(3, 2), attrs={"shape": [3, 2]})
f.op("reshape_bool", "reshape", {"x": b23}, b23.reshape(6), attrs={"shape": [-1]})
f.op("reshape_zero_size", "reshape", {"x": np.zeros((0, 3), np.float32)}, np.zeros((3, 0), np.float32),
     attrs={"shape": [3, 0]})
f.op("reshape_f16", "reshape", {"x": x234.astype(np.float16)}, x234.astype(np.float16).reshape(6, 4),
     attrs={"shape": [6, 4]})

# ------------------------------------------------------------ transpose
f.op("transpose_default_reverses", "transpose", {"x": x234}, np.transpose(x234))
f.op("transpose_perm", "transpose", {"x": x234}, np.transpose(x234, (1, 0, 2)), attrs={"perm": [1, 0, 2]})
f.op("transpose_perm_cycle_i64", "transpose", {"x": i234}, np.transpose(i234, (2, 0, 1)), attrs={"perm": [2, 0, 1]})
f.op("transpose_2d", "transpose", {"x": x23}, x23.T.copy(), attrs={"perm": [1, 0]})
f.op("transpose_bool", "transpose", {"x": b23}, b23.T.copy())
f.op("transpose_i64_big", "transpose", {"x": big}, big.T.copy(), attrs={"perm": [1, 0]})
f.op("transpose_rank1", "transpose", {"x": np.arange(4, dtype=np.float32)}, np.arange(4, dtype=np.float32))
f.op("transpose_scalar", "transpose", {"x": np.array(3.0, np.float32)}, np.array(3.0, np.float32))
z = np.zeros((2, 0, 3), np.float32)
f.op("transpose_zero_size", "transpose", {"x": z}, np.transpose(z, (2, 0, 1)), attrs={"perm": [2, 0, 1]})
x4 = r.standard_normal((2, 3, 4, 5)).astype(np.float32)
f.op("transpose_nchw_to_nhwc", "transpose", {"x": x4}, np.transpose(x4, (0, 2, 3, 1)), attrs={"perm": [0, 2, 3, 1]})

# ------------------------------------------------------------ expand
x31 = r.standard_normal((3, 1)).astype(np.float32)
f.op("expand", "expand", {"x": x31}, np.broadcast_to(x31, (2, 3, 4)), attrs={"shape": [2, 3, 4]})
# ONNX Expand is bidirectional: the result is the broadcast of both shapes.
f.op("expand_bidirectional", "expand", {"x": x31}, x31 * np.ones((1, 4), np.float32), attrs={"shape": [1, 4]})
f.op("expand_smaller_shape", "expand", {"x": x23}, x23, attrs={"shape": [3]})
f.op("expand_ones_shape", "expand", {"x": x23}, x23.reshape(1, 2, 3), attrs={"shape": [1, 1, 1]})
f.op("expand_scalar", "expand", {"x": np.array(1.5, np.float32)}, np.full((2, 2), 1.5, np.float32),
     attrs={"shape": [2, 2]})
f.op("expand_bool", "expand", {"x": np.array([True, False])}, np.broadcast_to(np.array([True, False]), (3, 2)),
     attrs={"shape": [3, 2]})
f.op("expand_i64_big", "expand", {"x": big[:, :1].copy()}, np.broadcast_to(big[:, :1], (2, 4)),
     attrs={"shape": [2, 4]})
f.op("expand_to_zero_size", "expand", {"x": np.ones((1, 3), np.float32)}, np.zeros((0, 3), np.float32),
     attrs={"shape": [0, 3]})

# ------------------------------------------------------------ concat
ca = r.standard_normal((2, 3)).astype(np.float32)
cb = r.standard_normal((1, 3)).astype(np.float32)
cc = r.standard_normal((2, 2)).astype(np.float32)
f.op("concat_axis0", "concat", {"a": ca, "b": cb}, np.concatenate([ca, cb], 0), attrs={"axis": 0})
f.op("concat_axis_neg1", "concat", {"a": ca, "b": cc}, np.concatenate([ca, cc], -1), attrs={"axis": -1})
f.op("concat_three", "concat", {"a": ca, "b": cc, "c": ca[:, :1].copy()},
     np.concatenate([ca, cc, ca[:, :1]], 1), attrs={"axis": 1})
f.op("concat_one_operand", "concat", {"a": ca}, ca, attrs={"axis": 0})
f.op("concat_zero_size_operand", "concat", {"a": ca, "b": np.zeros((0, 3), np.float32), "c": cb},
     np.concatenate([ca, cb], 0), attrs={"axis": 0})
f.op("concat_all_zero_size", "concat", {"a": np.zeros((2, 0), np.float32), "b": np.zeros((2, 0), np.float32)},
     np.zeros((2, 0), np.float32), attrs={"axis": 1})
f.op("concat_i64_big", "concat", {"a": big, "b": i234[:, 0].copy()}, np.concatenate([big, i234[:, 0]], 1),
     attrs={"axis": 1})
f.op("concat_bool", "concat", {"a": b23, "b": ~b23}, np.concatenate([b23, ~b23], 0), attrs={"axis": -2})
f.op("concat_middle_axis_3d", "concat", {"a": x234, "b": x234[:, :1].copy()},
     np.concatenate([x234, x234[:, :1]], 1), attrs={"axis": 1})

# ------------------------------------------------------------ split
f.op("split_default_axis", "split", {"x": x234}, np.split(x234, [1], 0), attrs={"sizes": [1, 1]})
f.op("split_axis_neg1", "split", {"x": x234}, np.split(x234, [2, 2], -1), attrs={"axis": -1, "sizes": [2, 0, 2]})
f.op("split_three_uneven", "split", {"x": x234}, np.split(x234, [1, 3], 2), attrs={"axis": 2, "sizes": [1, 2, 1]})
f.op("split_single", "split", {"x": x23}, [x23], attrs={"axis": 1, "sizes": [3]})
f.op("split_i64_big", "split", {"x": big}, np.split(big, [1], 1), attrs={"axis": 1, "sizes": [1, 2]})
f.op("split_bool", "split", {"x": b23}, np.split(b23, [1], 0), attrs={"sizes": [1, 1]})

# ------------------------------------------------------------ slice
s = r.standard_normal((5, 6)).astype(np.float32)
f.op("slice", "slice", {"x": s}, s[1:4, 2:5], attrs={"starts": [1, 2], "ends": [4, 5]})
f.op("slice_negative_bounds", "slice", {"x": s}, s[-3:-1, -4:], attrs={"starts": [-3, -4], "ends": [-1, 6]})
f.op("slice_clamped_ends", "slice", {"x": s}, s[2:, :], attrs={"starts": [2, -100], "ends": [I64_MAX, 100]})
f.op("slice_start_beyond_end", "slice", {"x": s}, s[7:9], attrs={"starts": [7], "ends": [9]})
f.op("slice_empty_start_ge_end", "slice", {"x": s}, s[:, 4:2], attrs={"starts": [4], "ends": [2], "axes": [1]})
f.op("slice_steps", "slice", {"x": s}, s[::2, 1::3], attrs={"starts": [0, 1], "ends": [5, 6], "steps": [2, 3]})
f.op("slice_negative_step", "slice", {"x": s}, s[4:1:-1], attrs={"starts": [4], "ends": [1], "steps": [-1]})
f.op("slice_reverse_all", "slice", {"x": s}, s[::-1, ::-2].copy(),
     attrs={"starts": [-1, I64_MAX], "ends": [I64_MIN, I64_MIN], "steps": [-1, -2]})
f.op("slice_negative_step_clamped_start", "slice", {"x": s}, s[:, 5:0:-2],
     attrs={"starts": [100], "ends": [0], "axes": [1], "steps": [-2]})
f.op("slice_axes_negative", "slice", {"x": x234}, x234[:, :, 1:3], attrs={"starts": [1], "ends": [3], "axes": [-1]})
f.op("slice_axes_unordered", "slice", {"x": x234}, x234[:, 1:, ::-1],
     attrs={"starts": [-1, 1], "ends": [I64_MIN, 3], "axes": [2, -2], "steps": [-1, 1]})
f.op("slice_big_step", "slice", {"x": s}, s[1::I64_MAX], attrs={"starts": [1], "ends": [5], "steps": [I64_MAX]})
f.op("slice_min_step", "slice", {"x": s}, s[3::-(2**62)], attrs={"starts": [3], "ends": [I64_MIN], "steps": [I64_MIN]})
f.op("slice_zero_size_input", "slice", {"x": np.zeros((0, 4), np.float32)}, np.zeros((0, 2), np.float32),
     attrs={"starts": [0, 1], "ends": [2, 3]})
f.op("slice_zero_size_negative_step", "slice", {"x": np.zeros((0, 4), np.float32)}, np.zeros((0, 4), np.float32),
     attrs={"starts": [-1], "ends": [I64_MIN], "steps": [-1]})
f.op("slice_i64_big", "slice", {"x": big}, big[:, ::-1].copy(),
     attrs={"starts": [-1], "ends": [I64_MIN], "axes": [1], "steps": [-1]})
f.op("slice_bool", "slice", {"x": b23}, b23[1:, 1:], attrs={"starts": [1, 1], "ends": [2, 3]})


def onnx_slice_bounds(d, start, end, step):
    """ONNX Slice's clamping of one axis as a NumPy slice. It differs from
    NumPy's own only for a negative step with start < -d: ONNX clamps start to
    0 (one element), NumPy yields nothing. onnxruntime follows the spec."""
    start, end = start + d if start < 0 else start, end + d if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), d), min(max(end, 0), d), step)
    start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return slice(start, None if end < 0 else end, step) if start >= 0 else slice(0, 0)


f.op("slice_negative_step_start_below_zero", "slice", {"x": s}, s[onnx_slice_bounds(5, -7, -8, -1)],
     attrs={"starts": [-7], "ends": [-8], "steps": [-1]})
assert s[onnx_slice_bounds(5, -7, -8, -1)].shape == (1, 6)
f.op("slice_rank1", "slice", {"x": np.arange(10, dtype=np.int64)}, np.arange(10)[-7:9:3],
     attrs={"starts": [-7], "ends": [9], "steps": [3]})

# ------------------------------------------------------------ squeeze / unsqueeze
q = r.standard_normal((1, 3, 1, 2)).astype(np.float32)
f.op("squeeze_default_all", "squeeze", {"x": q}, np.squeeze(q))
f.op("squeeze_axes", "squeeze", {"x": q}, np.squeeze(q, 2), attrs={"axes": [2]})
f.op("squeeze_negative_axis", "squeeze", {"x": q}, np.squeeze(q, (0, 2)), attrs={"axes": [-2, 0]})
f.op("squeeze_to_scalar", "squeeze", {"x": np.array([[5]], np.int64)}, np.array(5, np.int64))
f.op("squeeze_nothing", "squeeze", {"x": x23}, x23)
f.op("squeeze_bool", "squeeze", {"x": b23.reshape(2, 1, 3)}, b23, attrs={"axes": [1]})
f.op("squeeze_zero_size", "squeeze", {"x": np.zeros((1, 0), np.float32)}, np.zeros((0,), np.float32))
f.op("unsqueeze", "unsqueeze", {"x": x23}, x23[None], attrs={"axes": [0]})
f.op("unsqueeze_several", "unsqueeze", {"x": x23}, x23.reshape(1, 2, 1, 3, 1), attrs={"axes": [0, 2, 4]})
f.op("unsqueeze_negative", "unsqueeze", {"x": x23}, np.expand_dims(x23, -1), attrs={"axes": [-1]})
f.op("unsqueeze_negative_several", "unsqueeze", {"x": x23}, np.expand_dims(x23, (-1, -4)), attrs={"axes": [-1, -4]})
f.op("unsqueeze_scalar", "unsqueeze", {"x": np.array(2.0, np.float32)}, np.array([2.0], np.float32),
     attrs={"axes": [0]})
f.op("unsqueeze_scalar_two", "unsqueeze", {"x": np.array(7, np.int64)}, np.array([[7]], np.int64),
     attrs={"axes": [1, 0]})
f.op("unsqueeze_i64_big", "unsqueeze", {"x": big}, big[:, None], attrs={"axes": [1]})
f.op("unsqueeze_bool", "unsqueeze", {"x": b23}, b23[:, :, None], attrs={"axes": [2]})

# ------------------------------------------------------------ flatten
f.op("flatten_default", "flatten", {"x": x234}, x234.reshape(2, 12))
f.op("flatten_axis0", "flatten", {"x": x234}, x234.reshape(1, 24), attrs={"axis": 0})
f.op("flatten_axis_rank", "flatten", {"x": x234}, x234.reshape(24, 1), attrs={"axis": 3})
f.op("flatten_negative_axis", "flatten", {"x": x4}, x4.reshape(6, 20), attrs={"axis": -2})
f.op("flatten_i64", "flatten", {"x": i234}, i234.reshape(6, 4), attrs={"axis": 2})
f.op("flatten_zero_size", "flatten", {"x": np.zeros((2, 0, 3), np.float32)}, np.zeros((2, 0), np.float32))
f.op("flatten_scalar", "flatten", {"x": np.array(1.0, np.float32)}, np.ones((1, 1), np.float32), attrs={"axis": 0})


# ------------------------------------------------------------ pad
def onnx_pad(a, pads, mode="constant", value=0.0):
    """ONNX pads (begins then ends; negative crops) via numpy.pad then slicing."""
    rank = a.ndim
    grow = [(max(pads[d], 0), max(pads[d + rank], 0)) for d in range(rank)]
    kw = {"constant_values": value} if mode == "constant" else {}
    out = np.pad(a, grow, mode=mode, **kw)
    crop = tuple(slice(max(-pads[d], 0), out.shape[d] - max(-pads[d + rank], 0)) for d in range(rank))
    return out[crop]


def torch_pad(a, pads, value=0.0):
    """Constant padding through torch.nn.functional.pad (last axis first, begin/end pairs)."""
    tp = []
    for d in reversed(range(a.ndim)):
        tp += [pads[d], pads[d + a.ndim]]
    return torch.nn.functional.pad(torch.from_numpy(a), tp, mode="constant", value=value).numpy()


p = r.standard_normal((3, 4)).astype(np.float32)
f.op("pad_constant_default", "pad", {"x": p}, onnx_pad(p, [1, 0, 2, 3]), attrs={"pads": [1, 0, 2, 3]})
f.op("pad_constant_value", "pad", {"x": p}, onnx_pad(p, [0, 2, 1, 0], value=1.5),
     attrs={"pads": [0, 2, 1, 0], "value": 1.5})
f.op("pad_negative_crops", "pad", {"x": p}, torch_pad(p, [-1, 1, 0, -2]), attrs={"pads": [-1, 1, 0, -2]})
assert np.array_equal(torch_pad(p, [-1, 1, 0, -2]), onnx_pad(p, [-1, 1, 0, -2]))
f.op("pad_reflect", "pad", {"x": p}, onnx_pad(p, [2, 3, 2, 1], "reflect"),
     attrs={"pads": [2, 3, 2, 1], "mode": "reflect"})
pr = r.standard_normal((2, 3, 5)).astype(np.float32)
want = torch.nn.functional.pad(torch.from_numpy(pr), (4, 1, 2, 0), mode="reflect").numpy()
assert np.array_equal(want, onnx_pad(pr, [0, 2, 4, 0, 0, 1], "reflect"))
f.op("pad_reflect_3d", "pad", {"x": pr}, want, attrs={"pads": [0, 2, 4, 0, 0, 1], "mode": "reflect"})
f.op("pad_reflect_with_crop", "pad", {"x": p}, onnx_pad(p, [-1, 3, 2, -2], "reflect"),
     attrs={"pads": [-1, 3, 2, -2], "mode": "reflect"})
want = torch.nn.functional.pad(torch.from_numpy(pr), (2, 3, 1, 1), mode="replicate").numpy()
assert np.array_equal(want, onnx_pad(pr, [0, 1, 2, 0, 1, 3], "edge"))
f.op("pad_edge", "pad", {"x": pr}, want, attrs={"pads": [0, 1, 2, 0, 1, 3], "mode": "edge"})
f.op("pad_edge_size1", "pad", {"x": p[:1].copy()}, onnx_pad(p[:1], [2, -1, 3, 0], "edge"),
     attrs={"pads": [2, -1, 3, 0], "mode": "edge"})
f.op("pad_i64_value", "pad", {"x": i234}, onnx_pad(i234, [0, 1, 0, 1, 0, 2], value=-7),
     attrs={"pads": [0, 1, 0, 1, 0, 2], "value": -7.0})
f.op("pad_i64_big_edge", "pad", {"x": big}, onnx_pad(big, [1, 1, 0, 1], "edge"),
     attrs={"pads": [1, 1, 0, 1], "mode": "edge"})
f.op("pad_bool", "pad", {"x": b23}, onnx_pad(b23, [1, 0, 0, 1], value=True),
     attrs={"pads": [1, 0, 0, 1], "value": 1.0})
f.op("pad_zero_size_axis", "pad", {"x": np.zeros((0, 2), np.float32)}, np.full((2, 2), 3.0, np.float32),
     attrs={"pads": [1, 0, 1, 0], "value": 3.0})
f.op("pad_crop_to_empty", "pad", {"x": p}, p[:, 4:], attrs={"pads": [0, -2, 0, -2]})
f.op("pad_scalar", "pad", {"x": np.array(4.0, np.float32)}, np.array(4.0, np.float32), attrs={"pads": []})

# ------------------------------------------------------------ gather
table = r.standard_normal((5, 3)).astype(np.float32)
ids = np.array([[0, 4], [2, 2]], np.int64)
want = torch.nn.functional.embedding(torch.from_numpy(ids), torch.from_numpy(table)).numpy()
f.op("gather_embedding", "gather", {"w": table, "ids": ids}, want)
neg = np.array([-1, 0, -5, 3], np.int64)
f.op("gather_negative_indices", "gather", {"w": table, "ids": neg}, np.take(table, neg, 0))
f.op("gather_i32_indices", "gather", {"w": table, "ids": neg.astype(np.int32)}, np.take(table, neg, 0))
g = np.array([[2, 0], [-1, 1], [0, 0]], np.int64)
f.op("gather_axis1", "gather", {"x": x234, "i": g}, np.take(x234, g, 1), attrs={"axis": 1})
f.op("gather_axis_neg1", "gather", {"x": x234, "i": np.array([3, -4, 1], np.int32)},
     np.take(x234, [3, 0, 1], -1), attrs={"axis": -1})
f.op("gather_scalar_index", "gather", {"x": x234, "i": np.array(-2, np.int64)}, np.take(x234, -2, 1),
     attrs={"axis": 1})
f.op("gather_i64_big", "gather", {"x": big, "i": np.array([2, 0, 2], np.int64)}, np.take(big, [2, 0, 2], 1),
     attrs={"axis": 1})
f.op("gather_bool", "gather", {"x": b23, "i": np.array([1, 1, 0], np.int64)}, np.take(b23, [1, 1, 0], 0))
f.op("gather_zero_size_indices", "gather", {"x": table, "i": np.zeros((2, 0), np.int64)},
     np.zeros((2, 0, 3), np.float32))
f.op("gather_rank1_data", "gather", {"x": np.arange(6, dtype=np.int64) * 10, "i": g}, np.take(np.arange(6) * 10, g))

# ------------------------------------------------------------ shape_of
f.op("shape_of", "shape_of", {"x": x234}, np.array([2, 3, 4], np.int64))
f.op("shape_of_scalar", "shape_of", {"x": np.array(1.0, np.float32)}, np.zeros((0,), np.int64))
f.op("shape_of_zero_size_bool", "shape_of", {"x": np.zeros((3, 0), np.bool_)}, np.array([3, 0], np.int64))

# ------------------------------------------------------------ multi-op
# Attention-style head split and merge: [2,6] -> [2,2,3] -> [2,3,2] -> flatten.
m = r.standard_normal((2, 6)).astype(np.float32)
heads = m.reshape(2, 2, 3).transpose(0, 2, 1)
left, right = heads[:, :, :1], heads[:, :, 1:]
y = np.concatenate([right, left], 2)[:, ::-1].reshape(2, 6)
f.module("chain_reshape_transpose_split_concat", {"x": m}, [y, np.array([2, 3, 2], np.int64)],
         "    %0 = reshape %x {shape = [2, 2, 3]} : f32[2,2,3]\n"
         "    %1 = transpose %0 {perm = [0, 2, 1]} : f32[2,3,2]\n"
         "    %2, %3 = split %1 {axis = -1, sizes = [1, 1]} : f32[2,3,1], f32[2,3,1]\n"
         "    %4 = concat %3, %2 {axis = 2} : f32[2,3,2]\n"
         "    %5 = slice %4 {starts = [-1], ends = [" + str(I64_MIN) + "], axes = [1], steps = [-1]} : f32[2,3,2]\n"
         "    %6 = flatten %5 : f32[2,6]\n"
         "    %7 = shape_of %4 : i64[3]\n"
         "    return %6, %7\n")
# Embedding lookup of a token sequence, left-padded by one position, through no-op reshapes.
tok = np.array([[1, 3, 0]], np.int64)
emb = torch.nn.functional.embedding(torch.from_numpy(tok), torch.from_numpy(table)).numpy()
y = np.pad(emb, [(0, 0), (1, 0), (0, 0)])
f.module("chain_embedding_pad", {"w": table, "ids": tok}, [y],
         "    %0 = gather %w, %ids : f32[1,3,3]\n"
         "    %1 = pad %0 {pads = [0, 1, 0, 0, 0, 0]} : f32[1,4,3]\n"
         "    %2 = unsqueeze %1 {axes = [0]} : f32[1,1,4,3]\n"
         "    %3 = squeeze %2 {axes = [0]} : f32[1,4,3]\n"
         "    %4 = expand %3 {shape = [1, 4, 1]} : f32[1,4,3]\n"
         "    return %4\n")


# gather_grad: the data gradient of gather, from torch.autograd (repeated
# indices accumulate, as an embedding row used twice does).
def gather_grad_case(name, data_shape, idx, axis, seed):
    rg = np.random.default_rng(seed)
    data = torch.tensor(rg.standard_normal(data_shape), requires_grad=True)
    index = torch.tensor(idx, dtype=torch.int64)
    y = torch.index_select(data, axis, index.reshape(-1))
    out_shape = list(data_shape[:axis]) + list(index.shape) + list(data_shape[axis + 1:])
    dy = rg.standard_normal(out_shape)
    y.backward(torch.tensor(dy).reshape(y.shape))
    f.op(name, "gather_grad", {"dy": dy.astype(np.float32), "indices": np.array(idx, np.int64)},
         data.grad.numpy().astype(np.float32), attrs={"axis": axis, "size": data_shape[axis]})


gather_grad_case("gather_grad_embedding", (5, 3), [[1, 4], [1, 0]], 0, 31)
gather_grad_case("gather_grad_axis1", (2, 4, 3), [3, -1 + 4, 0], 1, 32)

# reshape's layout attribute relabels the result without moving data.
img = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
f.op("reshape_relabel_nhwc", "reshape", {"x": img}, img, attrs={"shape": [1, 2, 2, 3], "layout": "nhwc"},
     layouts={"out0": "nhwc"})


# interleave: the inverse of strided slicing; the result's residue classes
# filled one operand each (the expected value assembled by NumPy strided
# assignment).
def interleave_case(name, shape, steps, dtype=np.float32, seed=41):
    rg = np.random.default_rng(seed)
    y = (rg.standard_normal(shape) * 10).astype(dtype)
    classes = np.ndindex(*steps)
    inputs, offsets = {}, []
    for k, o in enumerate(classes):
        part = y[tuple(slice(oi, None, si) for oi, si in zip(o, steps))].copy()
        inputs["p%d" % k] = part
        offsets += list(o)
    f.op(name, "interleave", inputs, y, attrs={"shape": list(shape), "steps": list(steps), "offsets": offsets})


interleave_case("interleave_2x2", (1, 2, 5, 4), (1, 1, 2, 2))
interleave_case("interleave_3_uneven", (2, 7), (1, 3))
interleave_case("interleave_one_class", (3, 2), (1, 1))
interleave_case("interleave_step_past_size", (2, 1, 3), (1, 2, 2))
interleave_case("interleave_i32", (4, 6), (2, 3), dtype=np.int32)
