"""Reference cases for the loss ops (cross_entropy, mse_loss); expected values
from torch.nn.functional in float64, then cast to the case's dtype."""
import numpy as np
import torch
import torch.nn.functional as F

from casegen import Family, rng

f = Family("loss")
r = rng(11)


def f64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def scalar_like(t, like):
    return np.asarray(t.item(), dtype=np.asarray(like).dtype)


# ------------------------------------------------------------- cross_entropy
def ce_case(name, logits, labels, reduction=None, ignore_index=None):
    attrs = {}
    if reduction is not None:
        attrs["reduction"] = reduction
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    want = F.cross_entropy(f64(logits), torch.from_numpy(labels), reduction=reduction or "mean",
                           ignore_index=-100 if ignore_index is None else ignore_index)
    tol = 1e-12 if logits.dtype == np.float64 else 1e-6
    f.op(name, "cross_entropy", {"logits": logits, "labels": labels}, scalar_like(want, logits), attrs=attrs or None,
         atol=tol, rtol=tol)


logits = (r.standard_normal((6, 5)) * 2).astype(np.float32)
labels = r.integers(0, 5, 6).astype(np.int64)
some_ignored = labels.copy()
some_ignored[[1, 4]] = -100
ce_case("cross_entropy", logits, labels)
ce_case("cross_entropy_sum", logits, labels, reduction="sum")
ce_case("cross_entropy_mean_explicit", logits, labels, reduction="mean")
ce_case("cross_entropy_ignored", logits, some_ignored)
ce_case("cross_entropy_ignored_sum", logits, some_ignored, reduction="sum")
# An ignore_index that is also a valid class: those samples are left out.
ce_case("cross_entropy_ignore_index_in_range", logits, labels, ignore_index=int(labels[0]))
ce_case("cross_entropy_ignore_index_custom", logits, np.where(labels == 2, -1, labels).astype(np.int64),
        ignore_index=-1)
# Every sample ignored: the mean is 0 / 0 = NaN (as torch), the sum is 0.
all_ignored = np.full(6, -100, np.int64)
ce_case("cross_entropy_all_ignored_mean", logits, all_ignored)
ce_case("cross_entropy_all_ignored_sum", logits, all_ignored, reduction="sum")
# Large logits: a naive exp would overflow.
ce_case("cross_entropy_large_logits", (logits * 500).astype(np.float32), labels)
ce_case("cross_entropy_single_class", np.array([[3.0], [-2.0]], np.float32), np.array([0, 0], np.int64))
ce_case("cross_entropy_f64", logits.astype(np.float64) * 1.5, labels)
ce_case("cross_entropy_f64_sum_ignored", logits.astype(np.float64), some_ignored, reduction="sum")

# ------------------------------------------------------------------ mse_loss
def mse_case(name, a, b, reduction=None):
    want = F.mse_loss(f64(a), f64(b), reduction=reduction or "mean")
    tol = 1e-12 if a.dtype == np.float64 else 1e-6
    f.op(name, "mse_loss", {"a": a, "b": b}, scalar_like(want, a),
         attrs={"reduction": reduction} if reduction else None, atol=tol, rtol=tol)


a = r.standard_normal((3, 4)).astype(np.float32)
b = r.standard_normal((3, 4)).astype(np.float32)
mse_case("mse_loss", a, b)
mse_case("mse_loss_sum", a, b, reduction="sum")
mse_case("mse_loss_mean_explicit", a, b, reduction="mean")
a3 = r.standard_normal((2, 3, 5)).astype(np.float32)
b3 = r.standard_normal((2, 3, 5)).astype(np.float32)
mse_case("mse_loss_rank3", a3, b3)
mse_case("mse_loss_equal_inputs", a3, a3.copy())
mse_case("mse_loss_rank0", np.array(1.5, np.float32), np.array(-0.5, np.float32), reduction="sum")
mse_case("mse_loss_f64", a3.astype(np.float64), b3.astype(np.float64))
mse_case("mse_loss_f64_sum", a3.astype(np.float64), b3.astype(np.float64), reduction="sum")


# -------------------------------------------------------- cross_entropy_grad
# cross_entropy_grad(dloss, logits, labels): torch.autograd's logits.grad of
# F.cross_entropy in float64, for an upstream gradient dloss.
def ce_grad_case(name, logits, labels, dloss=1.0, reduction=None, ignore_index=None):
    attrs = {}
    if reduction is not None:
        attrs["reduction"] = reduction
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    lt = f64(logits).requires_grad_()
    loss = F.cross_entropy(lt, torch.from_numpy(labels), reduction=reduction or "mean",
                           ignore_index=-100 if ignore_index is None else ignore_index)
    loss.backward(torch.tensor(dloss, dtype=torch.float64))
    tol = 1e-12 if logits.dtype == np.float64 else 1e-6
    f.op(name, "cross_entropy_grad", {"dloss": np.asarray(dloss, logits.dtype), "logits": logits, "labels": labels},
         lt.grad.numpy().astype(logits.dtype), attrs=attrs or None, atol=tol, rtol=tol)


ce_grad_case("cross_entropy_grad", logits, labels)
ce_grad_case("cross_entropy_grad_scaled", logits, labels, dloss=-0.75)
ce_grad_case("cross_entropy_grad_sum", logits, labels, dloss=2.5, reduction="sum")
ce_grad_case("cross_entropy_grad_ignored", logits, some_ignored, dloss=1.5)
ce_grad_case("cross_entropy_grad_ignored_sum", logits, some_ignored, reduction="sum")
ce_grad_case("cross_entropy_grad_ignore_index_in_range", logits, labels, ignore_index=int(labels[0]))
# Every sample ignored: torch's gradient is 0 (the forward's mean is 0 / 0).
ce_grad_case("cross_entropy_grad_all_ignored_mean", logits, all_ignored)
ce_grad_case("cross_entropy_grad_large_logits", (logits * 500).astype(np.float32), labels)
ce_grad_case("cross_entropy_grad_single_class", np.array([[3.0], [-2.0]], np.float32), np.array([0, 0], np.int64))
ce_grad_case("cross_entropy_grad_f64", logits.astype(np.float64) * 1.5, labels, dloss=0.3)
ce_grad_case("cross_entropy_grad_f64_sum_ignored", logits.astype(np.float64), some_ignored, reduction="sum")
