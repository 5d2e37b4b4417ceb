"""Reference cases for the optimizer update ops; expected values come from
torch.optim itself: run a few steps, capture parameter and state before the
last one, and the results after it."""
import zlib

import numpy as np
import torch

from casegen import Family, rng

f = Family("optim")
r = rng(7)


def run_torch(opt_cls, kwargs, steps, shape, seed):
    """Runs `steps` optimizer steps on a parameter with fresh random
    gradients; returns (p, g, state, step) before the last step and
    (p', state') after it, in float32 like the tensors involved."""
    g = torch.Generator().manual_seed(seed)
    p = torch.nn.Parameter(torch.randn(shape, generator=g))
    opt = opt_cls([p], **kwargs)
    before = None
    for step in range(1, steps + 1):
        p.grad = torch.randn(shape, generator=g)
        if step == steps:
            st = opt.state[p]
            before = (p.detach().clone(), p.grad.clone(),
                      {k: v.clone() for k, v in st.items() if torch.is_tensor(v) and v.shape == p.shape})
        opt.step()
    after = (p.detach().clone(), {k: v.clone() for k, v in opt.state[p].items()
                                  if torch.is_tensor(v) and v.shape == p.shape})
    return before, after


def sgd_case(name, steps, **kw):
    lr = 0.05
    (p, g, st), (p2, st2) = run_torch(torch.optim.SGD, dict(lr=lr, **kw), steps, (3, 4), zlib.crc32(name.encode()) % 1000)
    attrs = {k: (float(v) if not isinstance(v, bool) else v) for k, v in kw.items()}
    lr_t = np.array(lr, np.float32)
    if kw.get("momentum", 0) == 0:
        f.op(name, "sgd_update", {"p": p.numpy(), "g": g.numpy(), "lr": lr_t}, p2.numpy(), attrs=attrs)
        return
    buf = st.get("momentum_buffer", torch.zeros_like(p))
    f.op(name, "sgd_update",
         {"p": p.numpy(), "g": g.numpy(), "buf": buf.numpy(), "lr": lr_t, "step": np.array(steps, np.int64)},
         [p2.numpy(), st2["momentum_buffer"].numpy()], attrs=attrs)


def adam_case(name, opt_cls, steps, decoupled, **kw):
    lr = 0.01
    (p, g, st), (p2, st2) = run_torch(opt_cls, dict(lr=lr, **kw), steps, (2, 5), zlib.crc32(name.encode()) % 1000)
    attrs = {"decoupled": decoupled}
    if "betas" in kw:
        attrs["beta1"], attrs["beta2"] = float(kw["betas"][0]), float(kw["betas"][1])
    if "eps" in kw:
        attrs["eps"] = float(kw["eps"])
    # AdamW's default weight decay is 0.01; make it explicit in the op.
    attrs["weight_decay"] = float(kw.get("weight_decay", 0.01 if decoupled else 0.0))
    zeros = torch.zeros_like(p)
    f.op(name, "adam_update",
         {"p": p.numpy(), "g": g.numpy(), "m": st.get("exp_avg", zeros).numpy(),
          "v": st.get("exp_avg_sq", zeros).numpy(), "lr": np.array(lr, np.float32),
          "step": np.array(steps, np.int64)},
         [p2.numpy(), st2["exp_avg"].numpy(), st2["exp_avg_sq"].numpy()], attrs=attrs, atol=1e-6, rtol=1e-5)


sgd_case("sgd_plain", 1)
sgd_case("sgd_weight_decay", 2, weight_decay=0.1)
sgd_case("sgd_momentum_first_step", 1, momentum=0.9)
sgd_case("sgd_momentum", 3, momentum=0.9)
sgd_case("sgd_momentum_dampening", 3, momentum=0.9, dampening=0.5, weight_decay=0.01)
sgd_case("sgd_nesterov", 3, momentum=0.8, nesterov=True)
adam_case("adam_first_step", torch.optim.Adam, 1, False)
adam_case("adam_step3", torch.optim.Adam, 3, False)
adam_case("adam_betas_eps_wd", torch.optim.Adam, 4, False, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
adam_case("adamw_step3", torch.optim.AdamW, 3, True)
adam_case("adamw_wd", torch.optim.AdamW, 5, True, weight_decay=0.2, betas=(0.85, 0.99))
