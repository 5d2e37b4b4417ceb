"""No op is asked for by its name outside the parser and the frontends.

    op_strings.py SOURCE_DIR

Code that asks what a node is compares handles (n.is(Op::Conv2d), ir/op.h)
and builds nodes by handle; names are the textual IR's and ONNX's, read by
ir/parser.cpp and frontend/. Prints every comparison of an op name with a
string literal, or lookup of an op by a literal name, elsewhere in the
library folders, and exits 1 if there is one.
"""
import os
import re
import sys

FOLDERS = ["ir", "exec", "passes", "codegen", "runtime"]
ALLOWED_FILES = {"ir/parser.cpp"}
PATTERNS = [
    re.compile(r'opName\(\)\s*[!=]=\s*"'),
    re.compile(r'\bop(?:\(\)|->|\.)name\s*[!=]=\s*"'),
    re.compile(r'OpRegistry::global\(\)\.find\("'),
    re.compile(r'\b(?:b|builder)\.ops?\("'),
    re.compile(r'buildNode\([^,]+,\s*"'),
]


def main():
    root = sys.argv[1]
    found = []
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED_FILES:
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if any(p.search(line) for p in PATTERNS):
                            found.append("%s:%d: %s" % (rel, number, line.strip()))
    for line in found:
        print(line)
    print("op_strings: %d places ask for an op by name" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
