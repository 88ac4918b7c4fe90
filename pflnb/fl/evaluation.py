"""Batched evaluation: the accuracy and mean cross-entropy of many clients' models at once, as
:func:`pflnb.fl.training.evaluate` computes them one client at a time: stacked models (one per client, ``vmap``), one
shared model (the samples concatenated, no padding), or several models' fused logits. Used by the batched runner
(:mod:`pflnb.fl.runner`) after training with :mod:`pflnb.fl.batched`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import vmap

from pflnb.fl import state as S
from pflnb.fl.functional import FunctionalModel, pad_splits
from pflnb.fl.sequential import fuse_logits


@torch.no_grad()
def evaluate_stacked(
    fm: FunctionalModel,
    states: dict[str, torch.Tensor] | S.State,
    shared: bool,
    splits: Sequence[Any],
    block: int = 1024,
    reduction: str = "sum",
    log_weights: torch.Tensor | None = None,
) -> list[dict[str, float]]:
    """Accuracy and mean cross-entropy of each client's model (eval mode) on its split, as
    :func:`pflnb.fl.training.evaluate` computes them; ``states`` stacked, or one state for all when ``shared``; a list
    of stacked states: their fused logits (:func:`~pflnb.fl.sequential.fuse_logits`: the sum, the mean with
    ``reduction="mean"``, the mixture with ``log_weights``, clients × models; a fused evaluation plan)."""
    xs, ys, sizes = pad_splits(splits)
    n_clients, device = len(splits), xs.device
    mask_all = torch.zeros(n_clients, xs.shape[1], dtype=torch.bool, device=device)
    for c, n in enumerate(sizes):
        mask_all[c, :n] = True

    def client_logits(state, x, m, lw):
        if isinstance(state, list):  # fused: several models' logits
            return fuse_logits([fm(st, x, m, False)[0] for st in state], reduction, lw)
        return fm(state, x, m, False)[0]

    fwd = vmap(client_logits, in_dims=(None if shared else 0, 0, 0, None if log_weights is None else 0))
    loss = torch.zeros(n_clients, dtype=torch.float64, device=device)
    correct = torch.zeros(n_clients, dtype=torch.long, device=device)
    for start in range(0, xs.shape[1], block):
        x, y, m = xs[:, start : start + block], ys[:, start : start + block], mask_all[:, start : start + block]
        first = states[0] if isinstance(states, list) else states
        mf = m.to(next(v for v in first.values() if v.is_floating_point()).dtype)
        logits = fwd(states, x, mf, log_weights)
        ce = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").reshape(y.shape)
        loss += torch.where(m, ce, torch.zeros_like(ce)).double().sum(1)
        correct += ((logits.argmax(-1) == y) & m).sum(1)
    out = []
    for c, n in enumerate(sizes):
        if n == 0:
            out.append({"acc": float("nan"), "loss": float("nan")})
        else:
            out.append({"acc": int(correct[c]) / n, "loss": float(loss[c]) / n})
    return out


@torch.no_grad()
def eval_block(device: torch.device, n_clients: int = 1) -> int:
    """Samples per client in one evaluation forward pass of ``n_clients`` stacked clients: 1024 on CUDA (chunks are
    sized to the free memory); elsewhere 256 in all (larger CPU batches run slower per sample and need more memory)."""
    return 1024 if device.type == "cuda" else max(1, 256 // max(n_clients, 1))


def evaluate_shared(fm: FunctionalModel, state: S.State, splits: Sequence[Any], block: int = 1024) -> list[dict[str, float]]:
    """:func:`evaluate_stacked` for clients that all evaluate the same ``state`` (e.g. FedAvg's global model): their
    samples concatenated and passed in blocks of ``block``, sums split back per client (no padding, no vmap)."""
    if fm.eval_batch_stats:
        return evaluate_stacked(fm, state, True, splits, block)
    sizes = [len(s) for s in splits]
    x, y = torch.cat([s.x for s in splits]), torch.cat([s.y for s in splits])
    owner = torch.repeat_interleave(torch.arange(len(splits), device=y.device), torch.as_tensor(sizes, device=y.device))
    loss = torch.zeros(len(splits), dtype=torch.float64, device=y.device)
    correct = torch.zeros(len(splits), dtype=torch.long, device=y.device)
    ones = torch.ones(min(block, max(len(y), 1)), device=y.device)
    for start in range(0, len(y), block):
        xb, yb, ob = x[start : start + block], y[start : start + block], owner[start : start + block]
        logits, _ = fm(state, xb, ones[: len(yb)], False)
        loss.index_add_(0, ob, F.cross_entropy(logits, yb, reduction="none").double())
        correct.index_add_(0, ob, (logits.argmax(1) == yb).long())
    return [
        {"acc": int(correct[c]) / n, "loss": float(loss[c]) / n} if n else {"acc": float("nan"), "loss": float("nan")}
        for c, n in enumerate(sizes)
    ]
