#!/usr/bin/env python3
"""Surveys the ONNX files of a folder: opsets, ops, functions, symbolic dims, and
what `kfuse import` says of each.

    bench/zoo/.venv/bin/python bench/zoo/survey.py [FOLDER] [--json OUT.json] [--no-kfuse]
        [--kfuse-test [cpu|interpreter|cuda]] [--no-downconvert]

FOLDER defaults to bench/zoo/out; every *.onnx under it is read (the tests/
folders that export.py writes, which only link to the same files, are skipped).
Writes FOLDER/survey.json and prints:
  - per model: IR version, opset imports, local functions, symbolic input dims,
    node count, the kfuse import result (and, for a model past kfuse's opset gate,
    the result after onnx.version_converter brings it down to kfuse's newest opset;
    with --kfuse-test, `kfuse test-onnx` against the PyTorch reference outputs);
  - a combined table: (domain, op_type) -> opset/schema version in effect, which
    models use it, and whether `kfuse import --list-ops` lists that version.
Ops are counted in the main graph, in subgraphs (If/Loop/Scan bodies) and in
model-local functions.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import onnx
from onnx import AttributeProto

HERE = Path(__file__).resolve().parent
DEFAULT_KFUSE = HERE.parent.parent / "build" / "bin" / "kfuse"


def norm_domain(d: str) -> str:
    return d or "ai.onnx"


def schema_version(op: str, domain: str, opset: int | None):
    """The since_version of the schema in effect at `opset`, or None if unknown."""
    if opset is None:
        return None
    try:
        s = onnx.defs.get_schema(op, opset, "" if domain == "ai.onnx" else domain)
        return s.since_version
    except Exception:  # noqa: BLE001
        return None


class Walker:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.opsets = {norm_domain(o.domain): o.version for o in model.opset_import}
        self.ops: Counter = Counter()  # (domain, op) -> count
        self.attrs: dict = defaultdict(set)  # (domain, op) -> attribute names
        self.where: dict = defaultdict(set)  # (domain, op) -> {"graph", "subgraph", "function:X"}
        self.opset_of: dict = {}  # (domain, op) -> opset in effect (model-level import)
        self.functions = []
        self.subgraphs = 0

    def walk_nodes(self, nodes, where, opsets):
        for n in nodes:
            key = (norm_domain(n.domain), n.op_type)
            self.ops[key] += 1
            self.where[key].add(where)
            self.opset_of.setdefault(key, opsets.get(key[0]))
            for a in n.attribute:
                self.attrs[key].add(a.name)
                if a.type == AttributeProto.GRAPH:
                    self.subgraphs += 1
                    self.walk_nodes(a.g.node, "subgraph", opsets)
                elif a.type == AttributeProto.GRAPHS:
                    for g in a.graphs:
                        self.subgraphs += 1
                        self.walk_nodes(g.node, "subgraph", opsets)

    def run(self):
        self.walk_nodes(self.model.graph.node, "graph", self.opsets)
        for f in self.model.functions:
            fops = {norm_domain(o.domain): o.version for o in f.opset_import} or self.opsets
            inner = Counter(norm_domain(n.domain) + "::" + n.op_type for n in f.node)
            self.functions.append({
                "name": f.name, "domain": f.domain, "overload": getattr(f, "overload", ""),
                "opset_import": fops, "nodes": len(f.node),
                "ops": dict(sorted(inner.items())),
            })
            self.walk_nodes(f.node, f"function:{f.domain}::{f.name}", fops)
        return self


def dims_of(vi):
    out = []
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_param"):
            out.append(d.dim_param)
        elif d.HasField("dim_value"):
            out.append(d.dim_value)
        else:
            out.append(None)
    return out


def kfuse_ops(kfuse: Path):
    """{op_type: [since versions]} from `kfuse import --list-ops`."""
    try:
        r = subprocess.run([str(kfuse), "import", "--list-ops"], capture_output=True,
                           text=True, timeout=60)
    except Exception:  # noqa: BLE001
        return None
    ops = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\|\s*([A-Za-z0-9_]+)\s*\|\s*([0-9, ]+)\|", line)
        if m:
            ops[m.group(1)] = [int(x) for x in m.group(2).replace(" ", "").split(",") if x]
    return ops


def io_shapes(path: Path):
    """Concrete input shapes from export.py's NAME.io/input_*.npy, if present."""
    import numpy as np
    io_dir = path.with_name(path.stem + ".io")
    shapes = {}
    if io_dir.is_dir():
        for f in io_dir.glob("input_*.npy"):
            shapes[f.stem[len("input_"):]] = list(np.load(f, mmap_mode="r").shape)
    return shapes


def run_kfuse(kfuse: Path, path: Path, shapes: dict | None, timeout: int):
    cmd = [str(kfuse), "import", str(path), "-o", "/tmp/zoo/x.kir"]
    for name, shp in (shapes or {}).items():
        cmd += ["--shape", f"{name}={','.join(map(str, shp))}"]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, text = r.returncode, (r.stderr + "\n" + r.stdout).replace(str(path.parent) + "/", "")
    except subprocess.TimeoutExpired:
        rc, text = "timeout", f"timed out after {timeout}s"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return {
        "cmd": " ".join(cmd[1:]).replace(str(path), path.name),
        "rc": rc,
        "ok": rc == 0,
        "seconds": round(time.time() - t0, 1),
        "first_lines": lines[:6] if rc != 0 else lines[:2],
    }


def expand_gelu(m: onnx.ModelProto) -> int:
    """Replaces Gelu (opset 20, no earlier version for the converter) in the main
    graph by its definition in ops of opset <= 13 (float32 constants)."""
    from onnx import helper, numpy_helper
    import numpy as np
    out, n_done = [], 0
    consts = {}

    def const(v):
        name = f"_gelu_c{len(consts)}"
        if v not in consts:
            consts[v] = name
            m.graph.initializer.append(numpy_helper.from_array(np.array(v, np.float32), name))
        return consts[v]
    for i, n in enumerate(m.graph.node):
        if n.op_type != "Gelu" or n.domain not in ("", "ai.onnx"):
            out.append(n)
            continue
        n_done += 1
        x, y, p = n.input[0], n.output[0], f"_gelu{i}_"
        approx = next((a.s.decode() for a in n.attribute if a.name == "approximate"), "none")
        if approx == "tanh":
            out += [helper.make_node("Mul", [x, x], [p + "x2"]),
                    helper.make_node("Mul", [p + "x2", x], [p + "x3"]),
                    helper.make_node("Mul", [p + "x3", const(0.044715)], [p + "a"]),
                    helper.make_node("Add", [x, p + "a"], [p + "b"]),
                    helper.make_node("Mul", [p + "b", const(float(np.sqrt(2 / np.pi)))], [p + "c"]),
                    helper.make_node("Tanh", [p + "c"], [p + "t"])]
        else:
            out += [helper.make_node("Mul", [x, const(float(1 / np.sqrt(2)))], [p + "c"]),
                    helper.make_node("Erf", [p + "c"], [p + "t"])]
        out += [helper.make_node("Add", [p + "t", const(1.0)], [p + "u"]),
                helper.make_node("Mul", [x, p + "u"], [p + "v"]),
                helper.make_node("Mul", [p + "v", const(0.5)], [y])]
    del m.graph.node[:]
    m.graph.node.extend(out)
    return n_done


def expand_split18(m: onnx.ModelProto) -> int:
    """Replaces Split (opset >= 18, which onnx's version converter cannot take below
    18) in the main graph by one Slice per output; sizes from the `split` input when
    it is an initializer, else equal parts of the axis (shape inference)."""
    from onnx import helper, numpy_helper
    import numpy as np
    if m.opset_import and max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) < 18:
        return 0
    inits = {i.name: i for i in m.graph.initializer}
    shapes = {}
    try:
        inf = onnx.shape_inference.infer_shapes(m)
        for vi in list(inf.graph.value_info) + list(inf.graph.input):
            shapes[vi.name] = dims_of(vi)
    except Exception:  # noqa: BLE001
        pass
    out, n_done = [], 0
    for i, n in enumerate(m.graph.node):
        if n.op_type != "Split" or n.domain not in ("", "ai.onnx"):
            out.append(n)
            continue
        axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
        sizes = None
        if len(n.input) > 1 and n.input[1] in inits:
            sizes = [int(v) for v in numpy_helper.to_array(inits[n.input[1]])]
        else:
            shp = shapes.get(n.input[0])
            if shp and isinstance(shp[axis], int) and shp[axis] % len(n.output) == 0:
                sizes = [shp[axis] // len(n.output)] * len(n.output)
        if sizes is None:
            out.append(n)
            continue
        n_done += 1
        start = 0
        for j, (y, sz) in enumerate(zip(n.output, sizes)):
            names = [f"_split{i}_{j}_{k}" for k in ("s", "e", "a")]
            for nm, v in zip(names, ([start], [start + sz], [axis])):
                m.graph.initializer.append(numpy_helper.from_array(np.array(v, np.int64), nm))
            out.append(helper.make_node("Slice", [n.input[0], *names], [y]))
            start += sz
    del m.graph.node[:]
    m.graph.node.extend(out)
    return n_done


def strip_unknown_attributes(m: onnx.ModelProto, opset: int):
    """Removes attributes the converter left behind that the target schema lacks
    (ReduceMean 18 -> 13 keeps noop_with_empty_axes); returns 'Op.attr' names."""
    dropped = set()

    def fix(nodes):
        for n in nodes:
            if n.domain not in ("", "ai.onnx"):
                continue
            try:
                known = set(onnx.defs.get_schema(n.op_type, opset).attributes)
            except Exception:  # noqa: BLE001
                continue
            keep = [a for a in n.attribute if a.name in known]
            if len(keep) != len(n.attribute):
                dropped.update(f"{n.op_type}.{a.name}" for a in n.attribute if a.name not in known)
                del n.attribute[:]
                n.attribute.extend(keep)
            for a in keep:
                if a.type == AttributeProto.GRAPH:
                    fix(a.g.node)
                elif a.type == AttributeProto.GRAPHS:
                    for g in a.graphs:
                        fix(g.node)
    fix(m.graph.node)
    return sorted(dropped)


def downconvert(path: Path, opset: int, dest: Path) -> dict:
    """Past kfuse's opset gate: Gelu and Split-18 expanded, onnx's version converter
    down to `opset` (and the IR version down to the one of that opset), saved as
    `dest`. Returns what was done, with converter_error where it failed."""
    from onnx import version_converter
    info = {"opset": opset}
    try:
        m = onnx.load(str(path))
        n_gelu = expand_gelu(m) if opset < 20 else 0
        n_split = expand_split18(m) if opset < 18 else 0
        m = version_converter.convert_version(m, opset)
        # the IR version that goes with the opset (ONNX 1.12: opset 17, IR 8)
        ir = {17: 8, 16: 8, 15: 8, 14: 7, 13: 7}.get(opset)
        if ir and m.ir_version > ir:
            m.ir_version = ir
        dropped = strip_unknown_attributes(m, opset)
        dest.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(m, str(dest))
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()
        info["converter_error"] = msg[-1][:300] if msg else type(e).__name__
        return info
    info["ir_version"] = m.ir_version
    if dropped:
        info["dropped_attributes"] = dropped
    if n_gelu:
        info["expanded_gelu"] = n_gelu
    if n_split:
        info["expanded_split18"] = n_split
    return info


def run_test_onnx(kfuse: Path, test_dir: Path, target: str, timeout: int):
    """`kfuse test-onnx` on one backend-test folder: PASS/FAIL and its first line."""
    cmd = [str(kfuse), "test-onnx", str(test_dir), "--target", target]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = (r.stdout + "\n" + r.stderr).replace(str(test_dir.parent) + "/", "")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        verdict = next((ln.split()[0] for ln in lines if ln.split()[0] in ("PASS", "FAIL", "SKIP")),
                       "ERROR")
    except subprocess.TimeoutExpired:
        lines, verdict = [f"timed out after {timeout}s"], "TIMEOUT"
    return {"target": target, "verdict": verdict, "seconds": round(time.time() - t0, 1),
            "first_lines": lines[:3]}


def link_test_data(src_test: Path, dst: Path):
    for d in sorted(src_test.glob("test_data_set_*")):
        link = dst / d.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(d.resolve())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", default=str(HERE / "out"))
    ap.add_argument("--json", help="where to write the survey (default FOLDER/survey.json)")
    ap.add_argument("--kfuse", default=str(DEFAULT_KFUSE))
    ap.add_argument("--no-kfuse", action="store_true", help="do not run kfuse import")
    ap.add_argument("--no-downconvert", action="store_true",
                    help="do not retry models past kfuse's opset gate after onnx.version_converter")
    ap.add_argument("--kfuse-test", metavar="TARGET", nargs="?", const="cpu", default=None,
                    help="also run `kfuse test-onnx --target TARGET` (default cpu) on each model"
                         " that imports, against export.py's reference outputs")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per kfuse import")
    a = ap.parse_args()

    root = Path(a.folder).resolve()
    files = sorted(p for p in root.rglob("*.onnx")
                   if "tests" not in p.relative_to(root).parts and not p.is_symlink())
    kfuse = Path(a.kfuse)
    use_kfuse = not a.no_kfuse and kfuse.is_file() and os.access(kfuse, os.X_OK)
    kops = kfuse_ops(kfuse) if use_kfuse else None
    os.makedirs("/tmp/zoo", exist_ok=True)

    models = []
    table = {}  # "domain::op" -> info
    for p in files:
        mid = str(p.relative_to(root).with_suffix(""))
        m = onnx.load(str(p), load_external_data=False)
        w = Walker(m).run()
        init = {i.name for i in m.graph.initializer}
        inputs = [{"name": i.name, "shape": dims_of(i),
                   "dtype": onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type).name}
                  for i in m.graph.input if i.name not in init]
        sym = sorted({d for i in inputs for d in i["shape"] if isinstance(d, str)})
        ops = {f"{d}::{o}": c for (d, o), c in sorted(w.ops.items())}
        entry = {
            "model": mid, "file": str(p.relative_to(root)),
            "producer": f"{m.producer_name} {m.producer_version}".strip(),
            "ir_version": m.ir_version,
            "opset_import": {norm_domain(o.domain): o.version for o in m.opset_import},
            "functions": w.functions,
            "inputs": inputs,
            "outputs": [{"name": o.name, "shape": dims_of(o)} for o in m.graph.output],
            "symbolic_dims": sym,
            "nodes": len(m.graph.node), "subgraphs": w.subgraphs,
            "initializers": len(m.graph.initializer),
            "ops": ops,
            "attributes": {f"{d}::{o}": sorted(s) for (d, o), s in sorted(w.attrs.items())},
        }
        if use_kfuse:
            shapes = io_shapes(p) if sym else None
            entry["kfuse_import"] = k = run_kfuse(kfuse, p, shapes, a.timeout)
            if sym:  # also what it says with the dims left symbolic
                entry["kfuse_import_unbound"] = run_kfuse(kfuse, p, None, a.timeout)
            tests = p.parent / "tests" / p.stem
            if k["ok"] and a.kfuse_test and tests.is_dir():
                entry["kfuse_test"] = run_test_onnx(kfuse, tests, a.kfuse_test, a.timeout)
            gate = re.search(r"supported range (\d+) to (\d+)", " ".join(k["first_lines"]))
            if not k["ok"] and gate and not a.no_downconvert:
                dest = Path("/tmp/zoo/down") / mid.replace("/", "__") / "model.onnx"
                dc = downconvert(p, int(gate.group(2)), dest)
                if "converter_error" not in dc:
                    dc["import"] = run_kfuse(kfuse, dest, shapes, a.timeout)
                    dc["import"]["cmd"] = dc["import"]["cmd"].replace(
                        "model.onnx", f"{p.name} (converted to opset {dc['opset']})")
                    if sym:
                        dc["import_unbound"] = run_kfuse(kfuse, dest, None, a.timeout)
                    if dc["import"]["ok"] and a.kfuse_test and tests.is_dir():
                        link_test_data(tests, dest.parent)
                        dc["test"] = run_test_onnx(kfuse, dest.parent, a.kfuse_test, a.timeout)
                entry["kfuse_import_downconverted"] = dc
        models.append(entry)
        for (d, o), c in w.ops.items():
            key = f"{d}::{o}"
            t = table.setdefault(key, {"domain": d, "op_type": o, "opsets": set(),
                                       "schema_versions": set(), "models": [], "nodes": 0,
                                       "in_functions": False})
            ops_v = w.opset_of.get((d, o))
            t["opsets"].add(ops_v)
            sv = schema_version(o, d, ops_v)
            t["schema_versions"].add(sv)
            t["models"].append(mid)
            t["nodes"] += c
            if any(x.startswith("function:") for x in w.where[(d, o)]):
                t["in_functions"] = True
        status = ""
        if use_kfuse:
            k = entry["kfuse_import"]
            status = "kfuse OK" if k["ok"] else f"kfuse FAIL: {k['first_lines'][0] if k['first_lines'] else k['rc']}"
            if "kfuse_test" in entry:
                status += f"; test-onnx {entry['kfuse_test']['verdict']}"
            dc = entry.get("kfuse_import_downconverted")
            if dc:
                if "converter_error" in dc:
                    status += f"\n    after down-conversion: converter: {dc['converter_error']}"
                else:
                    i = dc["import"]
                    status += "\n    after down-conversion: " + (
                        "kfuse OK" if i["ok"] else
                        f"kfuse FAIL: {i['first_lines'][0] if i['first_lines'] else i['rc']}")
                    if "import_unbound" in dc:
                        u = dc["import_unbound"]
                        status += "; unbound dims: " + (
                            "OK" if u["ok"] else (u["first_lines"][0] if u["first_lines"] else str(u["rc"])))
                    if "test" in dc:
                        status += f"; test-onnx {dc['test']['verdict']}"
        print(f"{mid}: ir {m.ir_version}, opset {entry['opset_import']}, {entry['nodes']} nodes, "
              f"funcs {len(w.functions)}, sym {sym or '-'}; {status}", flush=True)

    combined = []
    for key, t in sorted(table.items(), key=lambda kv: (-len(kv[1]["models"]), kv[0])):
        sv = sorted(x for x in t["schema_versions"] if x is not None)
        row = {
            "domain": t["domain"], "op_type": t["op_type"],
            "opsets": sorted(x for x in t["opsets"] if x is not None),
            "schema_versions": sv,
            "n_models": len(t["models"]), "nodes": t["nodes"], "models": t["models"],
            "in_functions": t["in_functions"],
        }
        if kops is not None:
            have = kops.get(t["op_type"]) if t["domain"] == "ai.onnx" else None
            row["kfuse_versions"] = have
            row["kfuse_covers"] = bool(have) and all(v in have for v in sv) if sv else bool(have)
        combined.append(row)

    all_funcs = sorted({f"{f['domain']}::{f['name']}" for e in models for f in e["functions"]})
    all_sym = sorted({d for e in models for d in e["symbolic_dims"]})
    out = {"folder": str(root), "onnx_version": onnx.__version__, "models": models,
           "ops": combined, "functions": all_funcs, "symbolic_dims": all_sym}
    if kops is not None:
        out["kfuse"] = str(kfuse)
    jpath = Path(a.json) if a.json else root / "survey.json"
    jpath.write_text(json.dumps(out, indent=1) + "\n")

    print(f"\n{'op':32s} {'opset':>8s} {'schema':>8s} {'models':>6s} {'nodes':>6s}  kfuse")
    for r in combined:
        kf = ""
        if "kfuse_versions" in r:
            kf = ("ok " if r["kfuse_covers"] else "MISSING ") + (",".join(map(str, r["kfuse_versions"] or [])))
        name = r["op_type"] if r["domain"] == "ai.onnx" else f"{r['domain']}::{r['op_type']}"
        print(f"{name:32s} {','.join(map(str, r['opsets'])):>8s} "
              f"{','.join(map(str, r['schema_versions'])):>8s} {r['n_models']:6d} {r['nodes']:6d}  {kf}")
    print(f"\nfunctions: {all_funcs or '-'}")
    print(f"symbolic dims: {all_sym or '-'}")
    print(f"wrote {jpath}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
