"""docs/onnx-support.md's generated blocks: the supported-op table and one
conformance section per ONNX backend-test folder, each between
<!-- BEGIN generated NAME --> and <!-- END generated NAME --> lines.

  onnx_support_doc.py check KFUSE DOC FOLDER
      Runs `kfuse test-onnx FOLDER`; fails if any test failed or if the
      doc's block for FOLDER differs from the run's (a CTest test per folder).
  onnx_support_doc.py update KFUSE DOC FOLDER...
      Rewrites the op table and the blocks of the given folders in DOC
      (scripts/gen-onnx-support-doc.sh calls this).
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile


def block_name(folder):
    return "conformance " + os.path.basename(os.path.normpath(folder))


def read_block(text, name):
    m = re.search(r"<!-- BEGIN generated %s -->\n(.*?)<!-- END generated %s -->" % (re.escape(name), re.escape(name)),
                  text, re.S)
    return m.group(1) if m else None


def replace_block(text, name, body):
    begin, end = "<!-- BEGIN generated %s -->\n" % name, "<!-- END generated %s -->" % name
    if read_block(text, name) is None:
        sys.exit("the doc has no block '%s' (add the BEGIN/END marker lines where it belongs)" % name)
    start = text.index(begin) + len(begin)
    return text[:start] + body + text[text.index(end, start):]


def run_folder(kfuse, folder):
    """(exit status, markdown section, stdout) of kfuse test-onnx FOLDER."""
    with tempfile.TemporaryDirectory() as tmp:
        md = os.path.join(tmp, "section.md")
        r = subprocess.run([kfuse, "test-onnx", folder, "--markdown", md], capture_output=True, text=True)
        section = open(md).read() if os.path.exists(md) else ""
    # Folders generated into a build folder (the onnx wheel's node tests) are
    # named the same wherever the build folder is.
    if "/onnx-wheel/" in folder:
        section = section.replace(folder, "BUILD/tests/onnx/onnx-wheel/" + os.path.basename(os.path.normpath(folder)))
    return r.returncode, section, r.stdout + r.stderr


def op_table(kfuse):
    return subprocess.run([kfuse, "import", "--list-ops"], capture_output=True, text=True, check=True).stdout


def check(kfuse, doc, folder):
    status, section, output = run_folder(kfuse, folder)
    print(output, end="")
    ok = status == 0
    if status != 0:
        print("kfuse test-onnx %s exited with %d" % (folder, status))
    written = read_block(open(doc).read(), block_name(folder))
    if written != section:
        ok = False
        print("docs/onnx-support.md is out of date for %s; regenerate it with scripts/gen-onnx-support-doc.sh:" % folder)
        sys.stdout.writelines(difflib.unified_diff((written or "").splitlines(True), section.splitlines(True),
                                                   "docs/onnx-support.md", "this run"))
    return 0 if ok else 1


def update(kfuse, doc, folders):
    text = replace_block(open(doc).read(), "supported ops", op_table(kfuse))
    for folder in folders:
        status, section, output = run_folder(kfuse, folder)
        print(output.splitlines()[-1] if output else "(no output)", "--", folder)
        text = replace_block(text, block_name(folder), section)
    with open(doc, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] not in ("check", "update"):
        sys.exit(__doc__)
    if sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(update(sys.argv[2], sys.argv[3], sys.argv[4:]))
