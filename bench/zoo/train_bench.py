#!/usr/bin/env python3
"""The training benchmark: whole training steps (forward, cross-entropy,
backward, SGD with momentum 0.9) of real architectures, kfuse against
PyTorch eager and torch.compile, at each thread count, every engine pinned
to the same CPUs, rounds alternating between engines.

    bench/zoo/.venv/bin/python bench/zoo/train_bench.py                    # export, then bench at 1 and 2 threads
    bench/zoo/.venv/bin/python bench/zoo/train_bench.py --models resnet18 --threads 1 --rounds 5
    bench/zoo/.venv/bin/python bench/zoo/train_bench.py --export-only

The models (seeded, random weights, one fixed batch repeated):
  resnet18      torchvision resnet18, 10 classes, batch 16 x 3 x 64 x 64
  mobilenet_v2  torchvision mobilenet_v2, 10 classes, batch 16 x 3 x 64 x 64
                (its classifier's dropout, p 0.2, draws a mask every step)
  vit_tiny      timm vit_tiny_patch16_224 at img_size 64, 10 classes, batch 8
  gpt_tiny      a GPT-style decoder written here (2 blocks, width 128, 4
                heads, vocabulary 1000, 64 tokens, batch 8); it returns its
                logits as [batch * tokens, vocabulary], which the loss reads
                against the next tokens
Each is exported in training mode with the TorchScript exporter at opset 17
(`training=TrainingMode.TRAINING, do_constant_folding=False`, as
docs/training.md says) to OUT/NAME.onnx, with NAME.x.npy and NAME.y.npy.

kfuse runs in its own process (build/bench/kfuse_bench, `cmake --build build
--target kfuse_bench`): one `train` workload per model, compiled once (its
first_step_ms is the time from reading the model to the end of the first
step: the import, passes, planning, code generation and one step). PyTorch
runs here: `opt.zero_grad(); F.cross_entropy(model(x), y).backward();
opt.step()`, with `model` itself (eager) or `torch.compile(model)` (the time
to its first step includes the compilation). The table gives medians over
all iterations and each engine's median over kfuse's (above 1: kfuse faster).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from bench import Kfuse, alternating_rounds, timed  # bench/zoo/bench.py: the kfuse_bench process, the rounds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ENGINES = ["kfuse", "eager", "compile"]
LR = 0.01
MOMENTUM = 0.9


def build_models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, width, heads, tokens):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.heads = heads
            self.register_buffer("mask", torch.full((tokens, tokens), float("-inf")).triu(1))

        def forward(self, h):
            b, t, c = h.shape
            q, k, v = self.qkv(self.ln1(h)).split(c, dim=2)
            shape = (b, t, self.heads, c // self.heads)
            q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5) + self.mask[:t, :t]
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
            h = h + self.proj(y)
            return h + self.out(F.gelu(self.fc(self.ln2(h))))

    class Gpt(nn.Module):
        def __init__(self, vocab=1000, width=128, heads=4, layers=2, tokens=64):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(tokens, width)
            self.blocks = nn.ModuleList(Block(width, heads, tokens) for _ in range(layers))
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.register_buffer("positions", torch.arange(tokens))

        def forward(self, ids):
            h = self.tok(ids) + self.pos(self.positions[: ids.shape[1]])
            for blk in self.blocks:
                h = blk(h)
            logits = self.head(self.ln(h))
            return logits.reshape(-1, logits.shape[-1])

    def resnet18():
        import torchvision
        return torchvision.models.resnet18(num_classes=10), torch.randn(16, 3, 64, 64), 10

    def mobilenet_v2():
        import torchvision
        return torchvision.models.mobilenet_v2(num_classes=10), torch.randn(16, 3, 64, 64), 10

    def vit_tiny():
        import timm
        return timm.create_model("vit_tiny_patch16_224", img_size=64, num_classes=10), torch.randn(8, 3, 64, 64), 10

    def gpt_tiny():
        return Gpt(), torch.randint(0, 1000, (8, 64)), 1000

    return {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "vit_tiny": vit_tiny, "gpt_tiny": gpt_tiny}


def make(name, torch):
    torch.manual_seed(0)
    model, x, classes = build_models()[name]()
    rows = x.shape[0] * (x.shape[1] if name == "gpt_tiny" else 1)
    g = torch.Generator().manual_seed(1)
    y = torch.randint(0, classes, (rows,), generator=g)
    return model.train(), x, y


def export(names, out: Path):
    import torch
    out.mkdir(parents=True, exist_ok=True)
    for n in names:
        model, x, y = make(n, torch)
        t0 = time.perf_counter()
        torch.onnx.export(model, (x,), str(out / f"{n}.onnx"), dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["logits"])
        np.save(out / f"{n}.x.npy", x.numpy())
        np.save(out / f"{n}.y.npy", y.numpy())
        print(f"  exported {n} in {time.perf_counter() - t0:.1f} s", flush=True)


def make_torch_step(name, torch, compiled):
    import torch.nn.functional as F
    model, x, y = make(name, torch)
    fn = torch.compile(model) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(fn(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    t0 = time.perf_counter()
    step()  # compiles on the first call
    return step, time.perf_counter() - t0


def bench_threads(args, names, out, threads, cpus):
    os.sched_setaffinity(0, set(cpus))
    import torch
    torch.set_num_threads(threads)
    steps, first = {}, {}
    lines = [f"{n} train {(out / f'{n}.onnx').resolve()} {(out / f'{n}.x.npy').resolve()} "
             f"{(out / f'{n}.y.npy').resolve()} {LR} sgd" for n in names]
    kfuse = (Kfuse(Path(args.kfuse_bench), lines, out / f"kfuse_train_t{threads}.txt", threads, cpus)
             if "kfuse" in args.engines else None)
    for n in names:
        if kfuse:
            steps[(n, "kfuse")] = None
            first[(n, "kfuse")] = kfuse.setup[n]["first_step_ms"] / 1e3
        for eng, compiled in (("eager", False), ("compile", True)):
            if eng in args.engines:
                try:
                    steps[(n, eng)], first[(n, eng)] = make_torch_step(n, torch, compiled)
                except Exception as ex:  # noqa: BLE001
                    print(f"  torch {eng} cannot train {n}: {str(ex).splitlines()[0][:120]}")
    def measure(n, eng):
        return kfuse.time(n, args.steps) if eng == "kfuse" else timed(steps[(n, eng)], args.steps)

    times = alternating_rounds(names, args.engines, steps, args.rounds, measure)
    if kfuse:
        kfuse.close()
    return {f"{n}|{e}": {"median_ms": statistics.median(v), "iterations": len(v), "first_step_s": first[(n, e)]}
            for (n, e), v in times.items() if v}


def table(results, names, threads, engines):
    others = [e for e in engines if e != "kfuse"]
    head = ("| model | kfuse ms | " + " | ".join(f"{e} ms" for e in others) + " | " +
            " | ".join(f"{e} / kfuse" for e in others) + " | first step s: kfuse | " +
            " | ".join(others) + " |")
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}", "", head, "|" + "---|" * (3 + 3 * len(others))]
    for n in names:
        k = results.get(f"{n}|kfuse")
        get = lambda e: results.get(f"{n}|{e}")  # noqa: E731
        row = [n, f"{k['median_ms']:.1f}" if k else "-"]
        row += [f"{get(e)['median_ms']:.1f}" if get(e) else "-" for e in others]
        row += [f"{get(e)['median_ms'] / k['median_ms']:.2f}x" if k and get(e) else "-" for e in others]
        row += [f"{k['first_step_s']:.2f}" if k else "-"]
        row += [f"{get(e)['first_step_s']:.2f}" if get(e) else "-" for e in others]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "out" / "train"), help="where the exported models go")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,vit_tiny,gpt_tiny")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"of {','.join(ENGINES)}")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3, help="steps per engine per round")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--no-export", action="store_true", help="use the models already in --out")
    ap.add_argument("--kfuse-bench", default=str(ROOT / "build" / "bench" / "kfuse_bench"))
    ap.add_argument("--json", help="write every median, iteration count and first-step time here")
    args = ap.parse_args()
    args.engines = args.engines.split(",")
    names = args.models.split(",")
    out = Path(args.out)
    if not args.no_export:
        export(names, out)
    if args.export_only:
        return
    allowed = sorted(os.sched_getaffinity(0))
    results = {}
    print(f"load average at start: {os.getloadavg()}")
    for t in [int(x) for x in args.threads.split(",")]:
        cpus = allowed[-t:]
        print(f"== {t} thread(s) on CPUs {cpus}", flush=True)
        results[str(t)] = bench_threads(args, names, out, t, cpus)
        print(table(results[str(t)], names, t, args.engines), flush=True)
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
