"""Writes examples/mlp/mlp.kir and its weights: the spiral classifier
Linear(2,64)-ReLU-Linear(64,64)-ReLU-Linear(64,3)-Softmax in the form an ONNX
exporter emits it (a flatten of an already-flat input, an identity where eval
dropout was, an explicit *1.0 scale), so the simplification passes have work
to show. Weights use PyTorch's default initialisation with seed 0.
Run with /usr/bin/python3 from this directory."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ops"))
from casegen import write_safetensors  # noqa: E402

torch.manual_seed(0)
layers = [torch.nn.Linear(2, 64), torch.nn.Linear(64, 64), torch.nn.Linear(64, 3)]
weights = {}
for i, layer in enumerate(layers, 1):
    weights["fc%d.weight" % i] = layer.weight.detach().numpy()
    weights["fc%d.bias" % i] = layer.bias.detach().numpy()
write_safetensors("mlp.safetensors", weights)
