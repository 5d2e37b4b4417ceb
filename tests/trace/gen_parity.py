"""Writes the PyTorch side of the nn parity tests (tests/trace/parity_test.cpp).

Run at test time by CTest with Debian's Python (torch 1.13):
    gen_parity.py OUTDIR
For each case it builds a torch.nn module, gives it random weights, runs it,
and writes
  OUTDIR/<case>.safetensors  the module's state_dict (names as torch has them)
  OUTDIR/<case>.npz          inputs in0, in1, ..., outputs out0, ..., and for
                             training-mode batch norm the buffers after the
                             step (state.<name>)
The C++ test builds the same structure with kfuse's nn modules, loads the
weights by name (strictly: any name mismatch fails), traces, interprets and
compares. Cases alternate np.savez and np.savez_compressed so that both .npz
flavours NumPy writes are read.
"""
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from casegen import write_safetensors  # noqa: E402

OUT = sys.argv[1]
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def randomize(module, seed):
    """Every parameter and float buffer drawn at random (variances positive),
    so that no test passes by a default ones/zeros initialisation."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if not t.dtype.is_floating_point:
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=g) + 0.5)
            else:
                t.copy_(torch.randn(t.shape, generator=g) * 0.5)


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def write(name, module, inputs, outputs, state=None):
    sd = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    write_safetensors(os.path.join(OUT, name + ".safetensors"), sd)
    arrays = {"in%d" % i: np.asarray(x.detach().numpy() if torch.is_tensor(x) else x) for i, x in enumerate(inputs)}
    arrays.update({"out%d" % i: y.detach().numpy() for i, y in enumerate(outputs)})
    for k, v in (state or {}).items():
        arrays["state." + k] = v.detach().numpy()
    save = np.savez_compressed if len(CASES_DONE) % 2 else np.savez
    save(os.path.join(OUT, name + ".npz"), **arrays)
    CASES_DONE.append(name)


CASES_DONE = []


def simple(name, module, x, seed=1, train=False):
    randomize(module, seed)
    module.train(train)
    write(name, module, [x], [module(x)])


@case
def layers():
    simple("linear", nn.Linear(5, 4), randn(2, 3, 5))
    simple("linear_nobias_3d", nn.Linear(6, 3, bias=False), randn(3, 2, 4, 6))
    simple("conv2d", nn.Conv2d(3, 4, 3, padding=1), randn(4, 2, 3, 8, 8))
    simple("conv2d_strided_grouped",
           nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), randn(5, 1, 4, 9, 8))
    simple("embedding", nn.Embedding(10, 4), torch.tensor([[0, 3, 9, 3, 1], [7, 7, 2, 0, 5]]))
    simple("flatten", nn.Flatten(), randn(6, 2, 3, 4, 5))
    simple("flatten_range", nn.Flatten(1, 2), randn(7, 2, 3, 4, 5))


@case
def norms():
    simple("batchnorm_eval", nn.BatchNorm2d(3), randn(10, 2, 3, 4, 5))
    simple("batchnorm_noaffine_eval", nn.BatchNorm2d(3, affine=False), randn(11, 2, 3, 4, 5))
    for name, momentum, tracked in (("batchnorm_train", 0.2, 0), ("batchnorm_train_cumulative", None, 3)):
        bn = nn.BatchNorm2d(3, momentum=momentum)
        randomize(bn, 12)
        bn.num_batches_tracked.fill_(tracked)
        x = randn(13, 4, 3, 5, 2)
        sd = {k: v.detach().numpy().copy() for k, v in bn.state_dict().items()}
        bn.train()
        y = bn(x)
        state = {k: getattr(bn, k) for k in ("running_mean", "running_var", "num_batches_tracked")}
        write_safetensors(os.path.join(OUT, name + ".safetensors"), sd)  # the weights before the step
        np.savez(os.path.join(OUT, name + ".npz"), in0=x.numpy(), out0=y.detach().numpy(),
                 **{"state." + k: v.detach().numpy() for k, v in state.items()})
    simple("layernorm", nn.LayerNorm(6), randn(14, 2, 3, 6))
    simple("layernorm_2d", nn.LayerNorm([3, 4], eps=1e-3), randn(15, 2, 3, 4))
    simple("layernorm_noaffine", nn.LayerNorm(5, elementwise_affine=False), randn(16, 4, 5))


@case
def activations():
    x = randn(20, 4, 7) * 3
    simple("relu", nn.ReLU(), x)
    simple("gelu", nn.GELU(), x)
    simple("gelu_tanh", nn.GELU(approximate="tanh"), x)
    simple("tanh", nn.Tanh(), x)
    simple("sigmoid", nn.Sigmoid(), x)
    simple("dropout_eval", nn.Dropout(0.3), x)


@case
def pooling():
    simple("maxpool", nn.MaxPool2d(3, stride=2, padding=1), randn(30, 2, 3, 9, 9))
    simple("maxpool_dilated_ceil", nn.MaxPool2d(2, stride=2, dilation=2, ceil_mode=True), randn(31, 1, 2, 9, 8))
    simple("avgpool", nn.AvgPool2d(3, stride=2, padding=1), randn(32, 2, 3, 9, 9))
    simple("avgpool_exclude_pad_ceil", nn.AvgPool2d((3, 2), stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False), randn(33, 1, 2, 8, 7))
    simple("adaptive_avgpool_1", nn.AdaptiveAvgPool2d(1), randn(34, 2, 3, 5, 7))
    simple("adaptive_avgpool_2x3", nn.AdaptiveAvgPool2d((2, 3)), randn(35, 2, 3, 4, 6))


@case
def attention():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    randomize(mha, 40)
    mha.eval()
    x = randn(41, 2, 5, 8)
    write("mha_self", mha, [x], [mha(x, x, x, need_weights=False)[0]])

    mha = nn.MultiheadAttention(8, 4, batch_first=True)
    randomize(mha, 42)
    mha.eval()
    q, k, v = randn(43, 2, 3, 8), randn(44, 2, 5, 8), randn(45, 2, 5, 8)
    attn_mask = torch.tensor([[0, 0, 1, 0, 1], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    kpm = torch.tensor([[0, 0, 0, 0, 1], [0, 1, 0, 0, 0]], dtype=torch.bool)
    y = mha(q, k, v, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=False)[0]
    write("mha_cross_masks", mha, [q, k, v, attn_mask.numpy(), kpm.numpy()], [y])

    mha = nn.MultiheadAttention(8, 2, bias=False)  # sequence first, torch's default
    randomize(mha, 46)
    mha.eval()
    x = randn(47, 4, 2, 8)
    float_mask = randn(48, 4, 4)
    write("mha_seq_first_float_mask", mha, [x, float_mask], [mha(x, x, x, attn_mask=float_mask, need_weights=False)[0]])


@case
def encoder():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    randomize(layer, 50)
    layer.eval()
    x = randn(51, 2, 5, 8)
    write("encoder_layer", layer, [x], [layer(x)])

    layer = nn.TransformerEncoderLayer(8, 4, dim_feedforward=12, activation="gelu", batch_first=True,
                                       norm_first=True, layer_norm_eps=1e-4)
    randomize(layer, 52)
    layer.eval()
    x = randn(53, 2, 4, 8)
    kpm = torch.tensor([[0, 0, 0, 1], [0, 0, 0, 0]], dtype=torch.bool)
    write("encoder_layer_gelu_norm_first", layer, [x, kpm.numpy()], [layer(x, src_key_padding_mask=kpm)])


@case
def models():
    mlp = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
    simple("sequential_mlp", mlp, randn(60, 8, 2))

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    cnn = nn.Sequential(block(3, 8), nn.MaxPool2d(2), block(8, 16), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(16, 10))
    simple("cnn", cnn, randn(61, 2, 3, 12, 12))


def numpy_archives():
    """np.savez and np.savez_compressed archives of every dtype kfuse reads,
    with the same arrays in a safetensors file to compare against
    (npz_test.cpp)."""
    rng = np.random.default_rng(5)
    arrays = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal(5).astype(np.float16),
        "f64_scalar": np.array(0.1, dtype=np.float64),
        "i64": np.array([[1, -2, 2 ** 40], [0, 7, -(2 ** 50)]], dtype=np.int64),
        "i32": np.array([5, -6, 7, 2 ** 31 - 1], dtype=np.int32),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u8": np.array([0, 200, 255], dtype=np.uint8),
        "bool": np.array([[True, False], [False, True]]),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "big": (np.arange(300 * 400) % 7).astype(np.float32).reshape(300, 400),
    }
    write_safetensors(os.path.join(OUT, "numpy_arrays.safetensors"), arrays)
    np.savez(os.path.join(OUT, "numpy_arrays.npz"), **arrays)
    np.savez_compressed(os.path.join(OUT, "numpy_arrays_compressed.npz"), **arrays)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    torch.set_grad_enabled(True)  # keep torch off its fused inference fast paths: the plain math is the oracle
    for fn in CASES:
        fn()
    numpy_archives()
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("\n".join(sorted(CASES_DONE + ["batchnorm_train", "batchnorm_train_cumulative"])) + "\n")


if __name__ == "__main__":
    main()
