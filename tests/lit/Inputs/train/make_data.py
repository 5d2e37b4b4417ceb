"""Writes the datasets the kfuse train lit tests use into argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
x = rng.standard_normal((12, 2)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
np.savez(os.path.join(out, "ok.npz"), x=x, y=y)
np.savez_compressed(os.path.join(out, "ok_compressed.npz"), inputs=x, labels=y.astype(np.int32))
np.savez(os.path.join(out, "bad_label.npz"), x=x, y=np.where(np.arange(12) == 5, 7, y))
np.savez(os.path.join(out, "float_labels.npz"), x=x, y=y.astype(np.float32))
np.savez(os.path.join(out, "wide.npz"), x=rng.standard_normal((12, 3)).astype(np.float32), y=y)
np.savez(os.path.join(out, "short_y.npz"), x=x, y=y[:10])
np.savez(os.path.join(out, "targets.npz"), x=x, y=rng.standard_normal((12, 3)).astype(np.float32))
np.savez(os.path.join(out, "unknown_param.npz"), **{"fc9.weight": np.zeros((3, 2), np.float32)})

# Token ids [N, 3] for tiny_lm.kir (5 tokens) and per-position labels [N, 3],
# -100 where ignored.
ids = rng.integers(0, 5, (6, 3))
labels = np.roll(ids, -1, axis=1)
labels[:, -1] = -100
np.savez(os.path.join(out, "tokens.npz"), x=ids, y=labels)
np.savez(os.path.join(out, "tokens_bad_label.npz"), x=ids, y=np.where((np.arange(18) == 13).reshape(6, 3), 9, labels))
np.savez(os.path.join(out, "tokens_flat_labels.npz"), x=ids, y=labels[:, 0])
np.savez(os.path.join(out, "tokens_ignore7.npz"), x=ids, y=np.where(labels == -100, 7, labels))
# A second input for tiny_lm_mask.kir: 1 where a position counts, 0 at padding.
keep = (labels != -100).astype(np.float32)
np.savez(os.path.join(out, "tokens_keep.npz"), x=ids, keep=keep, y=labels)
np.savez(os.path.join(out, "tokens_keep_i64.npz"), x=ids, keep=keep.astype(np.int64), y=labels)
