"""Writes, into the directory given as argv[1], an MLP as a kfuse module
(mlp.kir + mlp.safetensors), a dataset, and what PyTorch computes when
training it for STEPS full-batch steps with each optimizer configuration:
the loss of every step and the final parameters. The C++ test
(training_parity_test.cpp) trains the same module with kfuse's Trainer and
compares. Run with Debian's Python (/usr/bin/python3)."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from casegen import write_safetensors  # noqa: E402

STEPS = 20
BATCH, IN, HIDDEN, CLASSES = 32, 4, 16, 3
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
x = torch.randn(BATCH, IN)
y = torch.randint(0, CLASSES, (BATCH,))


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))


names = {"0.weight": "fc1.weight", "0.bias": "fc1.bias", "2.weight": "fc2.weight", "2.bias": "fc2.bias",
         "4.weight": "fc3.weight", "4.bias": "fc3.bias"}
model = make_model()
write_safetensors(os.path.join(out, "mlp.safetensors"),
                  {names[k]: v.detach().numpy() for k, v in model.state_dict().items()})
write_safetensors(os.path.join(out, "data.safetensors"), {"x": x.numpy(), "y": y.numpy()})
with open(os.path.join(out, "mlp.kir"), "w") as f:
    f.write("""module @mlp {
  weights "mlp.safetensors"
  param @fc1.weight : f32[%(h)d,%(i)d]
  param @fc1.bias : f32[%(h)d]
  param @fc2.weight : f32[%(h)d,%(h)d]
  param @fc2.bias : f32[%(h)d]
  param @fc3.weight : f32[%(c)d,%(h)d]
  param @fc3.bias : f32[%(c)d]
  func @forward(%%x: f32[%(b)d,%(i)d]) -> (f32[%(b)d,%(c)d]) {
    %%0 = matmul %%x, @fc1.weight {transpose_b = true} : f32[%(b)d,%(h)d]
    %%1 = add %%0, @fc1.bias : f32[%(b)d,%(h)d]
    %%2 = tanh %%1 : f32[%(b)d,%(h)d]
    %%3 = matmul %%2, @fc2.weight {transpose_b = true} : f32[%(b)d,%(h)d]
    %%4 = add %%3, @fc2.bias : f32[%(b)d,%(h)d]
    %%5 = relu %%4 : f32[%(b)d,%(h)d]
    %%6 = matmul %%5, @fc3.weight {transpose_b = true} : f32[%(b)d,%(c)d]
    %%7 = add %%6, @fc3.bias : f32[%(b)d,%(c)d]
    return %%7
  }
}
""" % {"b": BATCH, "i": IN, "h": HIDDEN, "c": CLASSES})

configs = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-3)),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
    "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.05, betas=(0.8, 0.99))),
}
manifest = {}
for name, (cls, kw) in configs.items():
    model = make_model()
    opt = cls(model.parameters(), **kw)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    final = {names[k]: v.detach().numpy() for k, v in model.state_dict().items()}
    final["losses"] = np.array(losses, np.float64)
    write_safetensors(os.path.join(out, "expected_%s.safetensors" % name), final)
    manifest[name] = {"optimizer": cls.__name__.lower(), **{k: (list(v) if isinstance(v, tuple) else v)
                                                             for k, v in kw.items()}}
with open(os.path.join(out, "configs.json"), "w") as f:
    json.dump(manifest, f, indent=1)
