"""The spiral demo in PyTorch: the same dataset and starting weights as
example_spiral (written with --save-data / --save-init), the same model,
loss, optimizer and schedule. Prints the same lines and, with --summary,
the final loss and accuracy as JSON.

  /usr/bin/python3 spiral_torch.py DATA.npz INIT.safetensors [--epochs N] [--summary FILE.json]
"""
import argparse
import json
import struct

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtypes[e["dtype"]]).reshape(e["shape"])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("init")
    p.add_argument("--epochs", type=int, default=1000)
    p.add_argument("--summary")
    args = p.parse_args()
    d = np.load(args.data)
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    model = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 3))
    init = read_safetensors(args.init)
    names = {"0": "fc1", "2": "fc2", "4": "fc3"}
    model.load_state_dict({k: torch.from_numpy(init[names[k.split(".")[0]] + "." + k.split(".")[1]].copy())
                           for k in model.state_dict()})
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss = None
    for epoch in range(1, args.epochs + 1):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if epoch % 100 == 0 or epoch == 1:
            print("epoch %4d  loss %.6f" % (epoch, loss.item()))
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    print("final accuracy %.2f%% (%d points)" % (100 * acc, len(y)))
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"loss": loss.item(), "accuracy": acc, "epochs": args.epochs}, f)


if __name__ == "__main__":
    main()
