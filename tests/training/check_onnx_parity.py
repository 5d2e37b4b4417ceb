"""PyTorch training parity through ONNX: a model exported with
torch.onnx.export is trained for STEPS steps by `kfuse train` and by
torch.optim from the same starting weights on the same batches; every step's
loss must match within LOSS_RTOL relative, and every tensor of torch's final
state_dict (parameters and batch-norm running statistics) within WEIGHT_TOL,
max |kfuse - torch| / max(1, |torch|) (absolute for weights up to 1,
relative above).

  check_onnx_parity.py KFUSE MODEL WORKDIR [TARGET...]

MODEL is mlp, cnn, cnn_bn9 (the CNN at opset 13: BatchNormalization-9 with
its five outputs, as PyTorch 1.13 exports it), transformer, gpt or mlm (a
GPT-style decoder and a BERT-style masked LM: int64 token ids in, token
logits [B, S, V] out, int64 labels [B, S] with -100 at ignored positions,
trained with torch's cross_entropy(logits.view(-1, V), labels.view(-1))
against kfuse train's token-level cross_entropy) or cnn_dropout (a CNN with
two nn.Dropout layers exported in training mode at opset 13, compared with
dropout ON: torch applies the masks kfuse draws, computed here from the
definition in ir/philox.h - Philox4x32-10 keyed by each Dropout node's seed,
a hash of its name, counted by the 1-based step - so the two trainings see
the same masks); TARGETs default to cpu and interpreter. Each model's
training step must also plan without a reference op (kfuse stats --train).
The models are exported in training mode (torch.onnx.TrainingMode.TRAINING,
no constant folding): an eval-mode export folds batch norms into the
convolutions and merges initializers with equal values (zero biases, unit
norm weights), which a trainer cannot undo. Run with Debian's Python
(/usr/bin/python3: torch, onnx, numpy)."""
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_np import read_safetensors  # noqa: E402
from training_plan import reference_op_failure  # noqa: E402
import onnx
import onnx.numpy_helper
import torch

STEPS = 20  # EPOCHS x BATCHES_PER_EPOCH, fixed batches (--no-shuffle)
EPOCHS, BATCHES_PER_EPOCH = 10, 2
LOSS_RTOL, WEIGHT_TOL = 1e-4, 1e-3

OPTIMIZERS = {
    "sgd": (torch.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=1e-3),
            ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9", "--weight-decay=0.001"]),
    "adam": (torch.optim.Adam, dict(lr=0.01, weight_decay=1e-4),
             ["--optimizer=adam", "--lr=0.01", "--weight-decay=0.0001"]),
}


class MLP(torch.nn.Sequential):
    def __init__(self):
        super().__init__(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                         torch.nn.Linear(32, 4))


class CNN(torch.nn.Module):
    """Two conv-bn-relu blocks with pooling, then a linear head. The
    convolutions have no bias, as usual before a batch norm: the gradient of
    such a bias is zero in exact arithmetic, and Adam would turn rounding
    noise into lr-sized steps (see NOISE_DRIVEN)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8)
        self.conv2, self.bn2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 2 * 2, 4)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.nn.functional.avg_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


class Transformer(torch.nn.Module):
    """One encoder block (batch first, no dropout) and a linear head over the
    mean of the sequence."""

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


class GPT(torch.nn.Module):
    """A GPT-2-style decoder: token and position embeddings, one pre-norm
    block (fused q/k/v projection, causal softmax attention, GELU MLP), a
    final LayerNorm and an output projection tied to the token embedding."""
    V, S, D, H = 50, 8, 16, 2

    def __init__(self):
        super().__init__()
        D = self.D
        self.tok, self.pos = torch.nn.Embedding(self.V, D), torch.nn.Embedding(self.S, D)
        self.ln1, self.ln2, self.ln_f = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.fc, self.out = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)

    def forward(self, ids):
        B, S = ids.shape
        D, H = self.D, self.H
        x = self.tok(ids) + self.pos(torch.arange(S))
        q, k, v = (t.reshape(B, S, H, D // H).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(D, dim=-1))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        causal = torch.ones(S, S, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, S, D))
        x = x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))
        return torch.nn.functional.linear(self.ln_f(x), self.tok.weight)


class MLM(torch.nn.Module):
    """A BERT-style masked LM: embeddings and LayerNorm, one post-norm
    encoder block with GELU, the MLM head (dense, GELU, LayerNorm, a decoder
    tied to the token embedding with its own bias)."""
    V, S, D = 40, 8, 16
    MASK = V - 1  # the [MASK] token

    def __init__(self):
        super().__init__()
        D = self.D
        self.tok, self.pos = torch.nn.Embedding(self.V, D), torch.nn.Parameter(0.1 * torch.randn(self.S, D))
        self.ln = torch.nn.LayerNorm(D)
        self.encoder = torch.nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
        self.dense, self.head_ln = torch.nn.Linear(D, D), torch.nn.LayerNorm(D)
        self.decoder_bias = torch.nn.Parameter(torch.zeros(self.V))

    def forward(self, ids):
        h = self.encoder(self.ln(self.tok(ids) + self.pos))
        h = self.head_ln(torch.nn.functional.gelu(self.dense(h)))
        return torch.nn.functional.linear(h, self.tok.weight, self.decoder_bias)


class CNNDropout(torch.nn.Module):
    """conv-bn-relu, dropout over the feature map (a 4-D tensor: its mask is
    indexed in NCHW order whatever layout kfuse picks), pooling, a hidden
    layer, dropout, the head."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8)
        self.drop1, self.drop2 = torch.nn.Dropout(0.2), torch.nn.Dropout(0.5)
        self.fc1, self.fc2 = torch.nn.Linear(8 * 4 * 4, 32), torch.nn.Linear(32, 4)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(self.drop1(torch.relu(self.bn(self.conv(x)))), 2)
        return self.fc2(self.drop2(torch.relu(self.fc1(torch.flatten(x, 1)))))


def philox_keep(seed, step, n, ratio):
    """kfuse's dropout mask (ir/philox.h): Philox4x32-10 of counter (index,
    step) under key seed; keep iff its first word's top 24 bits, as a
    fraction of 2^24, are >= ratio. Vectorised over the n flat indices."""
    m32 = np.uint64(0xFFFFFFFF)
    s, t = seed & (2**64 - 1), step & (2**64 - 1)
    idx = np.arange(n, dtype=np.uint64)
    c0, c1 = idx & m32, idx >> np.uint64(32)
    c2, c3 = np.full(n, t & 0xFFFFFFFF, np.uint64), np.full(n, t >> 32, np.uint64)
    k0, k1 = np.uint64(s & 0xFFFFFFFF), np.uint64(s >> 32)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0) & m32, p1 & m32, ((p0 >> np.uint64(32)) ^ c3 ^ k1) & m32, \
            p0 & m32
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
    return (c0 >> np.uint64(8)) >= np.uint64(math.ceil(ratio * 2**24))


# Known answers of tests/ops/gen_norm.py's scalar Philox, itself checked
# against Random123's test vectors.
assert [int(v) for v in philox_keep(0x123456789abcdef0, 2**33 + 5, 12, 0.5)] == [1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1]


def node_seed(name):
    """The seed kfuse gives an ONNX Dropout without a seed attribute:
    FNV-1a (64-bit) of its node name."""
    h = 0xcbf29ce484222325
    for ch in name.encode():
        h = ((h ^ ch) * 0x100000001b3) & (2**64 - 1)
    return h


class PhiloxDropout(torch.nn.Module):
    """nn.Dropout with kfuse's masks: those of `step` (set before each
    training step) under `seed`."""

    def __init__(self, ratio, seed):
        super().__init__()
        self.ratio, self.seed, self.step = ratio, seed, 0

    def forward(self, x):
        keep = philox_keep(self.seed, self.step, x.numel(), self.ratio).reshape(x.shape)
        return x * torch.from_numpy(keep.astype(np.float32)) / (1 - self.ratio)


def class_data(n, sample):
    return torch.randn(n, *sample), torch.randint(0, 4, (n,))


def gpt_data(n, _):
    """Next-token labels; the last position and about a fifth of the others
    ignored (-100), as padding would be."""
    x = torch.randint(0, GPT.V, (n, GPT.S))
    y = torch.full_like(x, -100)
    y[:, :-1] = x[:, 1:]
    y[torch.rand(n, GPT.S) < 0.2] = -100
    return x, y


def mlm_data(n, _):
    """A quarter of the positions masked: their input is [MASK], their label
    the original token; every other label ignored."""
    tokens = torch.randint(0, MLM.MASK, (n, MLM.S))
    masked = torch.rand(n, MLM.S) < 0.25
    masked[:, 0] = True  # at least one counted label per sequence
    return tokens.masked_fill(masked, MLM.MASK), torch.where(masked, tokens, torch.full_like(tokens, -100))


# model -> (class, one sample's shape, batch, opset[, data(n, sample) -> (x, y)])
MODELS = {
    "mlp": (MLP, (8,), 16, 13),
    "cnn": (CNN, (3, 8, 8), 8, 14),
    "cnn_bn9": (CNN, (3, 8, 8), 8, 13),
    "transformer": (Transformer, (6, 16), 8, 17),
    "gpt": (GPT, (GPT.S,), 4, 14, gpt_data),
    "mlm": (MLM, (MLM.S,), 4, 17, mlm_data),
    "cnn_dropout": (CNNDropout, (3, 8, 8), 8, 13),
}


# Elements whose gradient is zero in exact arithmetic, so that their gradient
# in either framework is rounding noise, which Adam's normalised step
# (m / (sqrt(v) + eps)) turns into steps of up to lr in a random direction:
# the key bias of attention (softmax over keys ignores a bias added to every
# key's score, q . b_k). Measured: they end up to ~3e-3 apart between two
# correct implementations. They are compared under SGD (where noise moves
# them by lr * 1e-9), reported but not compared under Adam.
NOISE_DRIVEN = {"transformer": {"encoder.self_attn.in_proj_bias": slice(16, 32)},
                "gpt": {"qkv.bias": slice(16, 32)},
                "mlm": {"encoder.self_attn.in_proj_bias": slice(16, 32)}}


def make(model):
    cls, sample, batch, opset = MODELS[model][:4]
    torch.manual_seed(1)
    return cls(), sample, batch, opset


def loss_of(logits, labels):
    """torch's cross_entropy, over every position of token logits."""
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100)


def start_from(net, initializers):
    """Sets every parameter and buffer of net to the ONNX model's initializer
    of the same name (the export's trace runs the model in training mode,
    which has already moved the running statistics)."""
    state = net.state_dict()
    for name in state:
        if name.endswith("num_batches_tracked"):
            continue
        if name not in initializers:
            sys.exit("the ONNX export has no initializer '%s' (has: %s)" % (name, ", ".join(sorted(initializers))))
        state[name] = torch.from_numpy(initializers[name].copy())
    net.load_state_dict(state)


def philox_dropouts(net, onnx_model):
    """Replaces net's nn.Dropout modules by PhiloxDropout, each seeded as
    kfuse seeds the exported node ('/drop1/Dropout' for module drop1)."""
    found = []
    for node in onnx_model.graph.node:
        if node.op_type != "Dropout":
            continue
        path = node.name.strip("/").rsplit("/", 1)[0].replace("/", ".")
        module = net.get_submodule(path)
        assert isinstance(module, torch.nn.Dropout), (node.name, module)
        setattr(net, path, PhiloxDropout(module.p, node_seed(node.name)))
        found.append(getattr(net, path))
    return found


def torch_run(model, initializers, x, y, opt_name, onnx_model):
    """Losses of every step and the final state_dict, trained in train()."""
    net, _, batch, _ = make(model)
    start_from(net, initializers)
    net.train()
    dropouts = philox_dropouts(net, onnx_model)
    cls, kw, _ = OPTIMIZERS[opt_name]
    opt = cls(net.parameters(), **kw)
    losses = []
    for _ in range(EPOCHS):
        for b in range(BATCHES_PER_EPOCH):
            xb, yb = x[b * batch:(b + 1) * batch], y[b * batch:(b + 1) * batch]
            for d in dropouts:
                d.step = len(losses) + 1  # kfuse train's %step: 1-based
            opt.zero_grad()
            loss = loss_of(net(xb), yb)
            losses.append(loss.item())
            loss.backward()
            opt.step()
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


def main():
    kfuse, model, work = sys.argv[1:4]
    targets = sys.argv[4:] or ["cpu", "interpreter"]
    os.makedirs(work, exist_ok=True)
    net, sample, batch, opset = make(model)
    torch.manual_seed(0)
    data = MODELS[model][4] if len(MODELS[model]) > 4 else class_data
    x, y = data(BATCHES_PER_EPOCH * batch, sample)
    onnx_path, data_path = os.path.join(work, model + ".onnx"), os.path.join(work, "data.npz")
    np.savez(data_path, x=x.numpy(), y=y.numpy())
    net.train()
    torch.onnx.export(net, x[:batch], onnx_path, opset_version=opset, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["x"], output_names=["logits"])
    onnx_model = onnx.load(onnx_path)
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in onnx_model.graph.initializer}

    failures = []
    for opt_name, (_, _, flags) in OPTIMIZERS.items():
        # Every step of the training plan is a generated kernel or a library
        # call: no op falls back to the reference interpreter.
        failure = reference_op_failure(kfuse, onnx_path, opt_name)
        if failure:
            failures.append("%s/%s: %s" % (model, opt_name, failure))
        want_losses, want_state = torch_run(model, initializers, x, y, opt_name, onnx_model)
        for target in targets:
            tag = "%s/%s/%s" % (model, opt_name, target)
            log, weights = (os.path.join(work, "%s_%s.%s" % (opt_name, target, ext))
                            for ext in ("jsonl", "safetensors"))
            cmd = [kfuse, "train", onnx_path, "--data", data_path, "--loss=cross_entropy", *flags,
                   "--batch=%d" % batch, "--epochs=%d" % EPOCHS, "--no-shuffle", "--target=" + target,
                   "--log-json", log, "--save-weights", weights]
            run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if run.returncode != 0:
                failures.append("%s: kfuse train failed (%d):\n%s\n%s" % (tag, run.returncode, " ".join(cmd),
                                                                            run.stdout))
                continue
            got_losses = [r["loss"] for r in map(json.loads, open(log)) if r["type"] == "step"]
            if len(got_losses) != STEPS:
                failures.append("%s: %d steps logged, expected %d" % (tag, len(got_losses), STEPS))
                continue
            loss_err = [abs(g - w) / abs(w) for g, w in zip(got_losses, want_losses)]
            worst_step = int(np.argmax(loss_err))
            got_state = read_safetensors(weights)
            weight_err, worst_name = 0.0, ""
            for name, want in want_state.items():
                if name.endswith("num_batches_tracked"):
                    continue  # not part of an ONNX export
                if name not in got_state:
                    failures.append("%s: the saved weights lack '%s' (have: %s)" % (tag, name,
                                                                                   ", ".join(sorted(got_state))))
                    continue
                got = got_state[name].astype(np.float64)
                if got.shape != want.shape:
                    failures.append("%s: '%s' is %s, torch's %s" % (tag, name, got.shape, want.shape))
                    continue
                err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
                noisy = NOISE_DRIVEN.get(model, {}).get(name)
                if noisy is not None and opt_name == "adam":
                    print("%-24s %s[%d:%d] (zero gradient, noise-driven under Adam): max err %.2e, not compared" %
                          (tag, name, noisy.start, noisy.stop, float(np.max(err[noisy]))))
                    err[noisy] = 0
                err = float(np.max(err)) if want.size else 0.0
                if err > weight_err:
                    weight_err, worst_name = err, name
            print("%-24s max loss rel err %.2e (step %d: kfuse %.9g, torch %.9g); max weight err %.2e (%s)" %
                  (tag, loss_err[worst_step], worst_step + 1, got_losses[worst_step], want_losses[worst_step],
                   weight_err, worst_name))
            if loss_err[worst_step] > LOSS_RTOL:
                failures.append("%s: step %d loss %.9g vs torch %.9g" % (tag, worst_step + 1, got_losses[worst_step],
                                                                       want_losses[worst_step]))
            if weight_err > WEIGHT_TOL:
                failures.append("%s: final '%s' differs from torch's by %.2e" % (tag, worst_name, weight_err))
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
