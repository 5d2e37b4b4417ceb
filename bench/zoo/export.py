#!/usr/bin/env python3
"""Exports the kfuse model zoo: small real architectures to ONNX with a current PyTorch.

Run with the zoo's venv (bash bench/zoo/setup-venv.sh):

    bench/zoo/.venv/bin/python bench/zoo/export.py                  # everything
    bench/zoo/.venv/bin/python bench/zoo/export.py --only resnet18,bert
    bench/zoo/.venv/bin/python bench/zoo/export.py --list

Variants (each a folder with its own manifest.json):
  OUT/            torch.onnx.export(dynamo=True), static shapes, the exporter's
                  default opset; falls back to dynamo=False where dynamo fails
  OUT/legacy17/   torch.onnx.export(dynamo=False, opset_version=17), static shapes
  OUT/dynamic/    dynamo=True with symbolic batch (and sequence) dimensions

Per model NAME, in each variant folder:
  NAME.onnx                          the graph (weights inlined; NAME.onnx.data beside
                                     it only when too big for one protobuf)
  NAME.io/input_<INPUT>.npy          one per graph input
  NAME.io/output_<OUTPUT>.npy        reference outputs of PyTorch eager
  tests/NAME/model.onnx + test_data_set_0/{input,output}_N.pb
                                     the same as an ONNX backend-test folder, for
                                     `kfuse test-onnx OUT/tests`
Random weights (seeded), eval mode, no network: HF models are built from config
classes, timm/torchvision with pretrained=False / weights=None; BatchNorm running
statistics of the image models are set from 4 random batches (see calibrate_batchnorm).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SEED = 0
INLINE_LIMIT = 1_500_000_000  # bytes of parameters kept inside the .onnx


# ---------------------------------------------------------------- the models


@dataclass
class Spec:
    name: str
    family: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], dict[str, torch.Tensor]]
    outputs: list[str]
    # symbolic dims of the dynamic variant: input name -> {axis: dim name}
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)
    notes: str = ""


def image_input(batch=1, size=224):
    g = torch.Generator().manual_seed(SEED)
    return {"input": torch.randn(batch, 3, size, size, generator=g)}


def token_inputs(batch, seq, vocab, pad_last=0):
    g = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, vocab, (batch, seq), generator=g, dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if pad_last and batch > 1:
        mask[-1, seq - pad_last:] = 0  # right padding in the last row
    return {"input_ids": ids, "attention_mask": mask}


class HFWrap(torch.nn.Module):
    """Calls an HF model with (input_ids, attention_mask), returns one tensor."""

    def __init__(self, model, field_name, use_cache=None):
        super().__init__()
        self.model = model
        self.field_name = field_name
        self.use_cache = use_cache

    def forward(self, input_ids, attention_mask):
        kw = dict(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        if self.use_cache is not None:
            kw["use_cache"] = self.use_cache
        return getattr(self.model(**kw), self.field_name)


def tv(name):
    def build():
        import torchvision.models as m
        return getattr(m, name)(weights=None)
    return build


def timm_model(name):
    def build():
        import timm
        return timm.create_model(name, pretrained=False)
    return build


def hf_bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                     intermediate_size=1024, max_position_embeddings=512)
    return HFWrap(BertModel(cfg, add_pooling_layer=False), "last_hidden_state")


def hf_distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(n_layers=4, dim=256, n_heads=4, hidden_dim=1024,
                           max_position_embeddings=512)
    return HFWrap(DistilBertModel(cfg), "last_hidden_state")


def hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=1024, use_cache=False)
    return HFWrap(GPT2LMHeadModel(cfg), "logits", use_cache=False)


def hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=688, vocab_size=32000,
                      max_position_embeddings=512, use_cache=False)
    return HFWrap(LlamaForCausalLM(cfg), "logits", use_cache=False)


def hf_t5_encoder():
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(num_layers=4, d_model=256, num_heads=4, d_kv=64, d_ff=1024,
                   vocab_size=32128, use_cache=False)
    return HFWrap(T5EncoderModel(cfg), "last_hidden_state")


IMG_DYN = {"input": {0: "batch"}}
TOK_DYN = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}


def specs() -> list[Spec]:
    out = []
    for n in ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
              "efficientnet_b0", "convnext_tiny", "regnet_y_400mf", "squeezenet1_1"]:
        out.append(Spec(n, "torchvision", tv(n), image_input, ["output"], IMG_DYN))
    # deit_tiny_patch16_224 is vit_tiny_patch16_224's graph exactly (same config):
    # the distilled DeiT (class + distillation tokens, two heads) differs.
    for n in ["vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224", "mobilevit_xxs",
              "convnext_atto"]:
        size = 256 if n.startswith("mobilevit") else 224
        out.append(Spec(n, "timm", timm_model(n), lambda s=size: image_input(1, s),
                        ["output"], IMG_DYN))
    out += [
        Spec("bert", "transformers", hf_bert, lambda: token_inputs(2, 128, 30522, pad_last=32),
             ["last_hidden_state"], TOK_DYN,
             "BertModel 4 layers, hidden 256, 4 heads, ffn 1024; batch 2 seq 128, row 2 right-padded by 32"),
        Spec("distilbert", "transformers", hf_distilbert,
             lambda: token_inputs(2, 128, 30522, pad_last=32), ["last_hidden_state"], TOK_DYN,
             "DistilBertModel 4 layers, dim 256, 4 heads, ffn 1024; batch 2 seq 128"),
        Spec("gpt2_lm", "transformers", hf_gpt2, lambda: token_inputs(1, 128, 50257),
             ["logits"], TOK_DYN, "GPT2LMHeadModel 4 layers, n_embd 256, 4 heads; batch 1 seq 128"),
        Spec("llama_lm", "transformers", hf_llama, lambda: token_inputs(1, 128, 32000),
             ["logits"], TOK_DYN,
             "LlamaForCausalLM 2 layers, hidden 256, 4 heads, 2 kv heads (GQA), ffn 688; batch 1 seq 128"),
        Spec("t5_encoder", "transformers", hf_t5_encoder,
             lambda: token_inputs(2, 128, 32128, pad_last=32), ["last_hidden_state"], TOK_DYN,
             "T5EncoderModel 4 layers, d_model 256, 4 heads, d_ff 1024; batch 2 seq 128"),
    ]
    return out


# ---------------------------------------------------------------- helpers


def calibrate_batchnorm(model, make_input, steps=4, batch=8):
    """Sets BatchNorm running statistics from random data (a cumulative average over
    `steps` batches in train mode), as training would. With the initial statistics
    (mean 0, var 1) the activations of random-init MobileNet/EfficientNet shrink to
    ~1e-14 at the output, which makes the reference outputs useless for checking."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return False
    g = torch.Generator().manual_seed(SEED + 1)
    shape = list(next(iter(make_input().values())).shape)
    shape[0] = batch
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(*shape, generator=g))
    model.eval()
    return True


def seed_all():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)


def versions():
    v = {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__}
    for m in ["torchvision", "timm", "transformers", "onnx", "onnxscript", "onnxruntime", "openvino"]:
        try:
            mod = __import__(m)
            v[m] = getattr(mod, "__version__", None) or mod.get_version()
        except Exception:  # noqa: BLE001
            v[m] = None
    return v


def first_error_lines(exc: BaseException, n=6) -> list[str]:
    lines = [ln for ln in "".join(traceback.format_exception_only(type(exc), exc)).splitlines()
             if ln.strip()]
    return lines[:n]


def to_tuple(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def export_dynamo(model, args, names, out_names, path: Path, dynamic, n_bytes):
    kw = {}
    if dynamic:
        # string names: torch.onnx turns them into Dim.DYNAMIC and names the axes
        # (a tuple in the order of args: dict keys would have to be forward()'s arg names)
        kw["dynamic_shapes"] = tuple(dict(dynamic.get(n, {})) or None for n in names)
    prog = torch.onnx.export(model, args, dynamo=True, input_names=names,
                             output_names=out_names, **kw)
    if dynamic:
        rename_dims(prog, dynamic)
    prog.save(str(path), external_data=n_bytes > INLINE_LIMIT)
    return prog


def rename_dims(prog, dynamic):
    """Gives the symbolic input dims the names of `dynamic` (s0 -> batch, ...)."""
    try:
        model = prog.model  # onnx_ir.Model
        mapping = {}
        for v in model.graph.inputs:
            for ax, dn in dynamic.get(v.name, {}).items():
                d = v.shape[ax]
                if not isinstance(d, int) and d is not None and str(d) != dn:
                    mapping[str(d)] = dn
        if mapping and hasattr(prog, "rename_axes"):
            prog.rename_axes(mapping)  # torch >= 2.9 renames every use, inside too
    except Exception as e:  # noqa: BLE001
        print(f"    (could not rename symbolic dims: {e})")


def export_legacy(model, args, names, out_names, path: Path, opset, dynamic):
    kw = {}
    if dynamic:
        kw["dynamic_axes"] = {k: dict(v) for k, v in dynamic.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset,
                          input_names=names, output_names=out_names,
                          do_constant_folding=True, **kw)


def write_test_folder(outdir: Path, name, onnx_file: Path, feeds, refs):
    from onnx import numpy_helper
    t = outdir / "tests" / name
    if t.exists():
        shutil.rmtree(t)
    (t / "test_data_set_0").mkdir(parents=True)
    (t / "model.onnx").symlink_to(os.path.relpath(onnx_file, t))
    data = onnx_file.with_name(onnx_file.name + ".data")
    if data.exists():
        (t / data.name).symlink_to(os.path.relpath(data, t))
    for kind, arrays in (("input", feeds), ("output", refs)):
        for i, (n, a) in enumerate(arrays.items()):
            tp = numpy_helper.from_array(a, n)
            (t / "test_data_set_0" / f"{kind}_{i}.pb").write_bytes(tp.SerializeToString())


def describe(path: Path):
    import onnx
    m = onnx.load(str(path), load_external_data=False)

    def dims(vi):
        t = vi.type.tensor_type
        return [d.dim_param if d.HasField("dim_param") else
                (d.dim_value if d.HasField("dim_value") else None) for d in t.shape.dim]

    def dtype(vi):
        return onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type).name
    init = {i.name for i in m.graph.initializer}
    return {
        "ir_version": m.ir_version,
        "opset": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "graph_inputs": [{"name": i.name, "shape": dims(i), "dtype": dtype(i)}
                         for i in m.graph.input if i.name not in init],
        "graph_outputs": [{"name": o.name, "shape": dims(o), "dtype": dtype(o)}
                          for o in m.graph.output],
        "functions": [f"{f.domain}::{f.name}" for f in m.functions],
        "nodes": len(m.graph.node),
    }


def ort_check(path: Path, feeds, refs):
    try:
        import onnxruntime as ort
    except Exception:  # noqa: BLE001
        return {"ok": None, "error": "onnxruntime not installed"}
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        so.log_severity_level = 3
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        got = sess.run(None, feeds)
        diffs = [float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
                 for g, r in zip(got, refs.values())]
        scale = [float(np.max(np.abs(r))) for r in refs.values()]
        return {"ok": all(d <= 1e-3 * max(1.0, s) for d, s in zip(diffs, scale)),
                "max_abs_diff": diffs, "max_abs_ref": scale}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": first_error_lines(e, 4)}


# ---------------------------------------------------------------- main


def export_one(spec: Spec, variant: str, outdir: Path, legacy_opset: int) -> dict:
    seed_all()
    entry = {"name": spec.name, "family": spec.family, "variant": variant}
    if spec.notes:
        entry["notes"] = spec.notes
    t0 = time.time()
    try:
        model = spec.build().eval()
        inputs = spec.inputs()
        if spec.family in ("torchvision", "timm") and calibrate_batchnorm(model, spec.inputs):
            entry["batchnorm_calibrated"] = True
    except Exception as e:  # noqa: BLE001
        entry.update(status="build-failed", error=first_error_lines(e))
        return entry
    names = list(inputs)
    args = tuple(inputs.values())
    n_params = sum(p.numel() for p in model.parameters())
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    entry["parameters"] = n_params
    with torch.no_grad():
        ref = to_tuple(model(*args))
    feeds = {k: v.numpy() for k, v in inputs.items()}
    refs = {n: r.detach().numpy() for n, r in zip(spec.outputs, ref)}

    path = outdir / f"{spec.name}.onnx"
    for stale in (path, path.with_name(path.name + ".data")):
        stale.unlink(missing_ok=True)
    dynamic = spec.dynamic if variant == "dynamic" else None
    errors = {}
    log = io.StringIO()
    with torch.no_grad():
        if variant == "legacy17":
            try:
                with contextlib.redirect_stdout(log):
                    export_legacy(model, args, names, spec.outputs, path, legacy_opset, None)
                entry["exporter"] = "torchscript (dynamo=False)"
            except Exception as e:  # noqa: BLE001
                errors["torchscript"] = first_error_lines(e)
        else:
            try:
                with contextlib.redirect_stdout(log):
                    export_dynamo(model, args, names, spec.outputs, path, dynamic, n_bytes)
                entry["exporter"] = "dynamo"
            except Exception as e:  # noqa: BLE001
                errors["dynamo"] = first_error_lines(e, 10)
                traceback.print_exc(limit=3)
                try:
                    with contextlib.redirect_stdout(log):
                        export_legacy(model, args, names, spec.outputs, path, None, dynamic)
                    entry["exporter"] = "torchscript (dynamo=False, fallback)"
                except Exception as e2:  # noqa: BLE001
                    errors["torchscript"] = first_error_lines(e2)
    if errors:
        entry["export_errors"] = errors
    if "exporter" not in entry:
        entry["status"] = "export-failed"
        entry["seconds"] = round(time.time() - t0, 1)
        return entry

    io_dir = outdir / f"{spec.name}.io"
    if io_dir.exists():
        shutil.rmtree(io_dir)
    io_dir.mkdir()
    for k, a in feeds.items():
        np.save(io_dir / f"input_{k}.npy", a)
    for k, a in refs.items():
        np.save(io_dir / f"output_{k}.npy", a)
    write_test_folder(outdir, spec.name, path, feeds, refs)

    d = describe(path)
    data = path.with_name(path.name + ".data")
    entry.update(
        status="ok",
        file=path.name,
        external_data=data.name if data.exists() else None,
        bytes=path.stat().st_size + (data.stat().st_size if data.exists() else 0),
        opset=d["opset"].get("ai.onnx"),
        opset_imports=d["opset"],
        ir_version=d["ir_version"],
        nodes=d["nodes"],
        functions=d["functions"],
        inputs=[dict(gi, npy=f"{io_dir.name}/input_{gi['name']}.npy",
                     value_shape=list(feeds[gi["name"]].shape))
                for gi in d["graph_inputs"]],
        outputs=[dict(go, npy=f"{io_dir.name}/output_{go['name']}.npy",
                      value_shape=list(refs[go["name"]].shape) if go["name"] in refs else None)
                 for go in d["graph_outputs"]],
        test_dir=f"tests/{spec.name}",
        onnxruntime=ort_check(path, feeds, refs),
    )
    entry["seconds"] = round(time.time() - t0, 1)
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated model names (see --list)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"),
                    help="output folder (default bench/zoo/out)")
    ap.add_argument("--variants", default="dynamo,legacy17,dynamic",
                    help="comma-separated subset of dynamo,legacy17,dynamic (default all)")
    ap.add_argument("--legacy-opset", type=int, default=17)
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    a = ap.parse_args()

    all_specs = specs()
    if a.list:
        for s in all_specs:
            print(f"{s.name:24s} {s.family}")
        return 0
    chosen = all_specs
    if a.only:
        want = [w.strip() for w in a.only.split(",") if w.strip()]
        known = {s.name for s in all_specs}
        bad = [w for w in want if w not in known]
        if bad:
            ap.error(f"unknown model(s) {bad}; known: {sorted(known)}")
        chosen = [s for s in all_specs if s.name in want]
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)

    root = Path(a.out).resolve()
    sub = {"dynamo": root, "legacy17": root / f"legacy{a.legacy_opset}", "dynamic": root / "dynamic"}
    failures = 0
    for variant in variants:
        outdir = sub[variant]
        outdir.mkdir(parents=True, exist_ok=True)
        mpath = outdir / "manifest.json"
        manifest = json.loads(mpath.read_text()) if mpath.exists() else {}
        models = {m["name"]: m for m in manifest.get("models", [])}
        for s in chosen:
            print(f"[{variant}] {s.name} ...", flush=True)
            e = export_one(s, variant, outdir, a.legacy_opset)
            models[s.name] = e
            if e.get("status") == "ok":
                o = e["onnxruntime"]
                print(f"    {e['exporter']}, opset {e['opset']}, {e['nodes']} nodes, "
                      f"{e['seconds']}s, onnxruntime ok={o.get('ok')} "
                      f"diff={o.get('max_abs_diff', o.get('error'))}", flush=True)
            else:
                failures += 1
                print(f"    {e['status']}: {e.get('export_errors', e.get('error'))}", flush=True)
            manifest = {
                "variant": variant,
                "exporter_settings": {
                    "dynamo": "torch.onnx.export(dynamo=True), default opset, static shapes",
                    "legacy17": f"torch.onnx.export(dynamo=False, opset_version={a.legacy_opset})",
                    "dynamic": "torch.onnx.export(dynamo=True), Dim.DYNAMIC batch/seq",
                }[variant],
                "seed": SEED,
                "versions": versions(),
                "models": [models[k] for k in sorted(models)],
            }
            mpath.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"done, {failures} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
