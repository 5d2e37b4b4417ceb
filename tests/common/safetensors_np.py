"""Reading a safetensors file into NumPy arrays, for the tests that compare
weights kfuse wrote (kfuse train --save-weights) with their oracle's."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "F16": np.float16}


def read_safetensors(path):
    """{name: array} of every tensor in `path`."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], DTYPES[spec["dtype"]]).reshape(spec["shape"])
    return out
