"""The benchmark's workloads, shared by run.py (CPU: kfuse, PyTorch eager,
onnxruntime) and gpu_bench.py (GPU: kfuse, PyTorch eager, torch.compile):
the same models, seeds and inputs, exported to ONNX for kfuse."""
import os

import torch

# numpy is imported where data is made (make_workloads, export): the GPU
# machines' run of gpu_bench.py builds the models from here with torch alone.


def spiral_data(per_class=86, classes=3, seed=7):
    """CS231n's spiral, 3 x 86 = 258 points cut to the batch of 256."""
    import numpy as np
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for k in range(classes):
        r = np.linspace(0, 1, per_class)
        t = 4 * k + 4 * r + 0.2 * rng.standard_normal(per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], 1))
        ys.append(np.full(per_class, k))
    x, y = np.concatenate(xs)[:256], np.concatenate(ys)[:256]
    return x.astype(np.float32), y.astype(np.int64)


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def small_cnn():
    def block(cin, cout):
        return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]

    m = torch.nn.Sequential(*block(3, 16), *block(16, 32))
    with torch.no_grad():  # non-trivial running statistics, as after training
        for bn in (m[1], m[4]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return m


def encoder_block():
    return torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.0,
                                            batch_first=True)


def make_workloads():
    import numpy as np
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    sx, sy = spiral_data()
    return [
        dict(name="spiral_mlp_train", kind="train", title="spiral MLP training step (2-64-64-3, batch 256, Adam)",
             model=mlp([2, 64, 64, 3]), x=sx, y=sy, lr=0.01),
        dict(name="mlp_train", kind="train", title="MLP training step (784-512-512-10, batch 128, Adam)",
             model=mlp([784, 512, 512, 10]), x=rng.standard_normal((128, 784)).astype(np.float32),
             y=rng.integers(0, 10, 128).astype(np.int64), lr=1e-3),
        dict(name="cnn_infer", kind="infer", title="CNN inference (2x conv-bn-relu, batch 8, 3x32x32)",
             model=small_cnn(), x=rng.standard_normal((8, 3, 32, 32)).astype(np.float32)),
        dict(name="transformer_infer", kind="infer",
             title="transformer encoder block inference (d 128, 4 heads, ffn 512, batch 4, seq 64)",
             model=encoder_block(), x=rng.standard_normal((4, 64, 128)).astype(np.float32)),
    ]


def export(w, out):
    """ONNX model and .npy inputs of a workload, and its manifest line."""
    import numpy as np
    model = w["model"].eval()
    path = os.path.join(out, w["name"] + ".onnx")
    # With gradients enabled: under no_grad, nn.TransformerEncoderLayer takes
    # its fused fast path (_transformer_encoder_layer_fwd), which ONNX cannot
    # export. PyTorch's own timing below does use the fast path.
    torch.onnx.export(model, (torch.from_numpy(w["x"]),), path, opset_version=14, input_names=["x"],
                      output_names=["y"])
    np.save(os.path.join(out, w["name"] + ".x.npy"), w["x"])
    line = "%s %s %s.onnx %s.x.npy" % (w["name"], w["kind"], w["name"], w["name"])
    if w["kind"] == "train":
        np.save(os.path.join(out, w["name"] + ".y.npy"), w["y"])
        line += " %s.y.npy %r" % (w["name"], w["lr"])
    return path, line


def iteration(model, kind, x, y=None, lr=None):
    """One iteration of a workload as a callable: a zero_grad / forward /
    cross_entropy / backward / Adam step (kind "train"; Adam's defaults,
    foreach=None: the single-tensor loop on the CPU), or a forward under
    inference_mode."""
    if kind == "train":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        model.train()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return step
    model.eval()

    def infer():
        with torch.inference_mode():
            model(x)

    return infer
