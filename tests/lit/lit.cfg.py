# lit configuration for kfuse's textual-IR tests (LLVM's lit + FileCheck).
import os

import lit.formats

config.name = "kfuse"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".kir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kfuse_obj_root, "tests", "lit")

# The ISA matrix (tests/isa/CMakeLists.txt) runs the package tests with
# every kfuse binary under qemu: a folder of wrappers stands in for bin/,
# and the scratch files go to a folder of their own. %bindir stays the
# real binaries (ldd reads them).
config.substitutions.append(("%bindir", config.kfuse_bin_dir))
config.kfuse_bin_dir = lit_config.params.get("kfuse_bin_dir", config.kfuse_bin_dir)
config.test_exec_root = lit_config.params.get("exec_root", config.test_exec_root)

# kfuse first, then LLVM's test tools (FileCheck, not, count).
config.environment["PATH"] = os.pathsep.join(
    [config.kfuse_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%python", "/usr/bin/python3"))
# Tests of the cuda target (CUDA C generation, no GPU needed): REQUIRES: cuda.
if config.kfuse_with_cuda.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cuda")
# An NVIDIA driver on this machine (the library the cuda runtime opens):
# tests of what running on the cuda target says without one are
# UNSUPPORTED: cuda-driver.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
# Tests that compile cpu packages (kfuse compile needs LLVM for them): REQUIRES: llvm.
if config.kfuse_with_llvm.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("llvm")
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(config.kfuse_src_root, "examples")))
