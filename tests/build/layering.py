"""The layering check: each library folder includes only the folders below it.

    layering.py SOURCE_DIR

    ir/        the C++ standard library only
    exec/      ir                              (the executable format)
    passes/    ir
    frontend/  ir
    runtime/   ir, exec
    codegen/   ir, exec, passes, runtime
    tools/, tests/, bench/, examples/: anything

An include of a folder that is not kfuse's ("onnx/onnx_pb.h") is a library's
and not checked. Prints every include that breaks the rule, with its file
and line, and exits 1 if there is one.
"""
import os
import re
import sys

ALLOWED = {
    "ir": {"ir"},
    "exec": {"ir", "exec"},
    "passes": {"ir", "passes"},
    "frontend": {"ir", "frontend"},
    "runtime": {"ir", "exec", "runtime"},
    "codegen": {"ir", "exec", "passes", "runtime", "codegen"},
}
KFUSE_FOLDERS = set(ALLOWED) | {"tools", "tests", "bench", "examples"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def main():
    root = sys.argv[1]
    broken, checked = [], 0
    for layer, allowed in sorted(ALLOWED.items()):
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(folder, name)
                checked += 1
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in KFUSE_FOLDERS and m.group(1) not in allowed:
                            broken.append("%s:%d: %s/ includes %s" % (os.path.relpath(path, root), number, layer,
                                                                      line.strip()))
    for b in broken:
        print(b)
    print("layering: %d files checked, %d includes against the layers" % (checked, len(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
