#!/usr/bin/env python3
"""Writes tests/onnx/modern/: small real architectures exported by a current
PyTorch with torch.onnx.export's default (dynamo) exporter and a dynamic
batch axis, with their inputs and PyTorch's outputs, for the suite's
onnx_modern_* tests (tests/onnx/modern_models.py). CI never runs this: it
needs PyTorch 2.x and its friends from PyPI (bench/zoo/setup-venv.sh makes
such a venv, ~6 GB). Regenerate with

    bench/zoo/.venv/bin/python scripts/export-test-models.py

Every run writes the same files (seeded weights and data; no downloads:
torchvision and timm models without weights, HF models from configs).
Widths are tiny and depths 1-2 so that all fixtures together stay a few MB;
the graphs have the structure of the full models (the exporter writes the
same ops whatever the width).

Per model NAME: NAME/model.onnx, NAME/input_<name>.npy, NAME/output_<name>.npy
(PyTorch's float32 result) and NAME/output_<name>.f64.npy (the same model run
in float64, the result float32 arithmetic approximates);
manifest.json gives the versions, exporter, opset, inputs and outputs. For
vit_tiny, train.npz and train_losses.json hold a fixed batch and PyTorch's
losses over five SGD steps on it, which onnx_modern_train checks kfuse's
training against.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SEED = 0
OUT = Path(__file__).resolve().parent.parent / "tests" / "onnx" / "modern"
TRAIN_STEPS, TRAIN_LR = 5, 0.05


def gen(offset=0):
    return torch.Generator().manual_seed(SEED + offset)


def narrow_channels(model: torch.nn.Module, divisor: int) -> torch.nn.Module:
    """torchvision's ResNet with every channel count divided by `divisor`:
    torchvision fixes its widths (64 to 512), which would make the fixture
    tens of MB; the module tree and forward stay torchvision's."""
    for name, m in list(model.named_modules()):
        for child_name, child in list(m.named_children()):
            new = None
            if isinstance(child, torch.nn.Conv2d):
                cin = child.in_channels if child.in_channels == 3 else child.in_channels // divisor
                new = torch.nn.Conv2d(cin, child.out_channels // divisor, child.kernel_size, child.stride,
                                      child.padding, child.dilation, child.groups, child.bias is not None)
            elif isinstance(child, torch.nn.BatchNorm2d):
                new = torch.nn.BatchNorm2d(child.num_features // divisor)
            elif isinstance(child, torch.nn.Linear):
                new = torch.nn.Linear(child.in_features // divisor, child.out_features)
            if new is not None:
                setattr(m, child_name, new)
    return model


def calibrate_batchnorm(model, shape):
    """Running statistics from random batches, as training would set them
    (with mean 0 and variance 1 a random-init network's outputs vanish)."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for i in range(4):
            model(torch.randn(*shape, generator=gen(100 + i)))
    model.eval()


class HFWrap(torch.nn.Module):
    """An HF model called with (input_ids, attention_mask), one output."""

    def __init__(self, model, field):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True, use_cache=False)
        return getattr(out, self.field)


def resnet():
    import torchvision
    torch.manual_seed(SEED)
    m = narrow_channels(torchvision.models.resnet18(weights=None, num_classes=10), 8)
    calibrate_batchnorm(m, (8, 3, 32, 32))
    return m, {"input": torch.randn(2, 3, 32, 32, generator=gen())}, ["logits"]


def mobilenet():
    import torchvision
    torch.manual_seed(SEED)
    m = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25, num_classes=10)
    calibrate_batchnorm(m, (8, 3, 32, 32))
    return m, {"input": torch.randn(2, 3, 32, 32, generator=gen())}, ["logits"]


def vit():
    import timm
    torch.manual_seed(SEED)
    m = timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=8, embed_dim=64, depth=2,
                                                         num_heads=2, mlp_ratio=2.0, num_classes=10)
    # No two parameters equal: the exporter merges identical initializers
    # (every LayerNorm's ones, every zero bias) into one, which leaves
    # inference alone but would tie them in training.
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.add_(0.02 * torch.randn(p.shape, generator=gen(1000 + i)))
    return m.eval(), {"input": torch.randn(2, 3, 32, 32, generator=gen())}, ["logits"]


def tokens(batch, seq, vocab, pad_last=0):
    ids = torch.randint(0, vocab, (batch, seq), generator=gen(), dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if pad_last:
        mask[-1, seq - pad_last:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def bert():
    from transformers import BertConfig, BertModel
    torch.manual_seed(SEED)
    cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64)
    return HFWrap(BertModel(cfg, add_pooling_layer=False).eval(), "last_hidden_state"), \
        tokens(2, 16, 1000, pad_last=3), ["last_hidden_state"]


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(SEED)
    cfg = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=2, use_cache=False)
    return HFWrap(GPT2LMHeadModel(cfg).eval(), "logits"), tokens(2, 16, 1000), ["logits"]


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(SEED)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=128, max_position_embeddings=64, use_cache=False)
    return HFWrap(LlamaForCausalLM(cfg).eval(), "logits"), tokens(2, 16, 1000), ["logits"]


MODELS = {"resnet18_narrow": resnet, "mobilenet_v2": mobilenet, "vit_tiny": vit, "bert_tiny": bert,
          "gpt2_tiny": gpt2, "llama_tiny": llama}


def export(name, build):
    model, inputs, out_names = build()
    names = list(inputs)
    args = tuple(inputs[n] for n in names)
    with torch.no_grad():
        outs = model(*args)
        exact = model.double()(*(a.double() if a.is_floating_point() else a for a in args))
        model.float()
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    exact = exact if isinstance(exact, (tuple, list)) else (exact,)
    folder = OUT / name
    folder.mkdir(parents=True)
    dynamic = tuple({0: "batch"} for _ in names)
    prog = torch.onnx.export(model, args, dynamo=True, input_names=names, output_names=out_names,
                             dynamic_shapes=dynamic)
    prog.save(str(folder / "model.onnx"))
    for n, t in inputs.items():
        np.save(folder / f"input_{n}.npy", t.numpy())
    for n, t, e in zip(out_names, outs, exact):
        np.save(folder / f"output_{n}.npy", t.detach().numpy())
        np.save(folder / f"output_{n}.f64.npy", e.detach().numpy())
    import onnx
    m = onnx.load(str(folder / "model.onnx"))
    return {"exporter": "dynamo", "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "ir_version": m.ir_version, "bytes": (folder / "model.onnx").stat().st_size,
            "inputs": {n: list(t.shape) for n, t in inputs.items()}, "outputs": out_names,
            "ops": sorted({n.op_type for n in m.graph.node})}


def train_reference():
    """PyTorch's losses over SGD steps on one fixed batch of vit_tiny, which
    has neither dropout nor batch norm: its training forward is the exported
    (eval) graph."""
    model, _, _ = vit()
    x = torch.randn(4, 3, 32, 32, generator=gen(7))
    y = torch.randint(0, 10, (4,), generator=gen(8))
    opt = torch.optim.SGD(model.parameters(), lr=TRAIN_LR)
    losses = []
    model.train()
    for _ in range(TRAIN_STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.savez(OUT / "vit_tiny" / "train.npz", x=x.numpy(), y=y.numpy())
    (OUT / "vit_tiny" / "train_losses.json").write_text(
        json.dumps({"optimizer": "sgd", "lr": TRAIN_LR, "losses": losses}, indent=1) + "\n")


def versions():
    out = {"python": sys.version.split()[0]}
    for mod in ["torch", "torchvision", "timm", "transformers", "onnx", "onnxscript", "numpy"]:
        out[mod] = __import__(mod).__version__
    return out


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    manifest = {"versions": versions(), "batch_axis": "every input's axis 0 is the symbolic dim 'batch'",
                "models": {}}
    for name, build in MODELS.items():
        print("exporting", name, flush=True)
        manifest["models"][name] = export(name, build)
    train_reference()
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(MODELS)} models, {total / 1e6:.1f} MB in {OUT}")


if __name__ == "__main__":
    main()
