"""The batched runner's functional pieces: a model as a function of stacked states (:class:`FunctionalModel`, with
BatchNorm over each client's real samples, :class:`MaskedBatchNorm`), the staging of clients' states, splits and
minibatch schedules, and the functional optimizers that follow ``torch.optim``'s SGD and Adam operation by operation
(see :mod:`pflnb.fl.batched`)."""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.func import functional_call

from pflnb.fl import state as S
from pflnb.fl.plan import LocalPlan, Phase, set_model_attrs
from pflnb.fl.training import batch_indices, step_groups

# ------------------------------------------------------------------------------------------ the functional model


class _BNContext:
    """What the masked BN layers of one functional model read (sample mask, mode) and write (new buffers)."""

    def __init__(self) -> None:
        self.mask: torch.Tensor | None = None
        self.training = False
        self.new_buffers: dict[str, torch.Tensor] = {}


class MaskedBatchNorm(nn.Module):
    """BatchNorm whose batch statistics and running-statistics update use only the samples with mask 1.

    Same parameters and buffers (names, values) as the BN layer it replaces. In training mode it returns the
    normalized batch and records the updated running statistics in the shared context (instead of writing them
    in place), so the update can be returned from a ``vmap(grad(...))`` call and masked per client.
    """

    def __init__(self, bn: nn.modules.batchnorm._BatchNorm, prefix: str, bn_ctx: _BNContext) -> None:
        super().__init__()
        self.eps, self.momentum = bn.eps, bn.momentum
        self.affine, self.track_running_stats = bn.affine, bn.track_running_stats
        if bn.affine:
            self.weight, self.bias = bn.weight, bn.bias
        if bn.track_running_stats:
            self.register_buffer("running_mean", bn.running_mean)
            self.register_buffer("running_var", bn.running_var)
            self.register_buffer("num_batches_tracked", bn.num_batches_tracked)
        self.prefix = prefix
        self.bn_ctx = bn_ctx

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalized ``x`` (N, C, ...) with batch statistics over the masked samples or the running statistics."""
        c = self.bn_ctx
        view = (1, -1) + (1,) * (x.dim() - 2)
        if c.training or not self.track_running_stats:
            m = c.mask.to(x.dtype).reshape((-1,) + (1,) * (x.dim() - 1))
            dims = [0, *range(2, x.dim())]
            count = c.mask.to(x.dtype).sum() * math.prod(x.shape[2:])
            mean = (x * m).sum(dims) / count
            xc = x - mean.reshape(view)
            var = (xc * xc * m).sum(dims) / count
            out = xc * torch.rsqrt(var.reshape(view) + self.eps)
            if c.training and self.track_running_stats:
                tracked = self.num_batches_tracked + 1
                factor = self.momentum if self.momentum is not None else 1.0 / tracked.to(x.dtype)
                unbiased = var * (count / (count - 1))
                p = self.prefix
                c.new_buffers[p + "running_mean"] = (factor * mean + (1 - factor) * self.running_mean).detach()
                c.new_buffers[p + "running_var"] = (factor * unbiased + (1 - factor) * self.running_var).detach()
                c.new_buffers[p + "num_batches_tracked"] = tracked
        else:
            out = (x - self.running_mean.reshape(view)) * torch.rsqrt(self.running_var.reshape(view) + self.eps)
        if self.affine:
            out = out * self.weight.reshape(view) + self.bias.reshape(view)
        return out


class _Net(nn.Module):
    """Wrapper whose forward returns the logits, or (features, logits) for models with ``features``/``head``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor, features: bool = False) -> Any:
        if not features:
            return self.net(x)
        h = self.net.features(x)
        return h, self.net.head(h)


def unsupported_model(model: nn.Module) -> str | None:
    """Why ``model`` cannot be trained by the batched runner (None when it can): layers that mix samples other
    than BatchNorm, or randomness (dropout), which vmap cannot reproduce per client."""
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            return f"the model has dropout ({name})"
    return None


class FunctionalModel:
    """A copy of a model with its BatchNorm layers masked, called functionally on a given state."""

    def __init__(self, model: nn.Module) -> None:
        module = copy.deepcopy(model)
        self.bn = _BNContext()
        for name, sub in list(module.named_modules()):
            if isinstance(sub, nn.modules.batchnorm._BatchNorm):
                parent_name, _, attr = name.rpartition(".")
                parent = module.get_submodule(parent_name) if parent_name else module
                parent._modules[attr] = MaskedBatchNorm(sub, name + ".", self.bn)
        self.net = _Net(module)
        self.eval_batch_stats = any(
            isinstance(m, nn.modules.batchnorm._BatchNorm) and not m.track_running_stats for m in model.modules()
        )  # BN without running statistics normalizes with batch statistics in eval mode too
        self.param_names = [n for n, _ in model.named_parameters()]
        self.buffer_names = [n for n, _ in model.named_buffers()]
        self.state_keys = list(model.state_dict())

    @contextlib.contextmanager
    def attrs(self, attrs: tuple[tuple[str, Any], ...]) -> Iterator[None]:
        """The model's attributes set to a plan's ``model_attrs`` for the duration (restored after)."""
        module = self.net.net
        saved = [(name, getattr(module, name)) for name, _ in attrs]
        set_model_attrs(module, attrs)
        try:
            yield
        finally:
            set_model_attrs(module, tuple(saved))

    def __call__(
        self, state: dict[str, torch.Tensor], x: torch.Tensor, mask: torch.Tensor, training: bool, features: bool = False
    ) -> tuple[Any, dict[str, torch.Tensor]]:
        """(logits or (features, logits), updated BN buffers) of the model with ``state`` on ``x``."""
        self.bn.mask, self.bn.training, self.bn.new_buffers = mask, training, {}
        try:
            out = functional_call(self.net, {"net." + k: v for k, v in state.items()}, (x,), {"features": features}, strict=True)
            return out, self.bn.new_buffers
        finally:
            self.bn.mask, self.bn.new_buffers = None, {}


# ------------------------------------------------------------------------------------------ staging


def stack_states(states: Sequence[S.State], keys: Sequence[str]) -> dict[str, torch.Tensor]:
    """Client states stacked along a new first dimension (one expanded copy when all are the same object)."""
    first = states[0]
    if all(s is first for s in states):
        return {k: first[k].detach().unsqueeze(0).expand(len(states), *first[k].shape).clone() for k in keys}
    return {k: torch.stack([s[k].detach() for s in states]) for k in keys}


def unstack(stacked: dict[str, torch.Tensor], i: int) -> S.State:
    """Client ``i``'s state out of a stacked state (copies)."""
    return {k: v[i].clone() for k, v in stacked.items()}


def pad_splits(splits: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """The clients' samples stacked as (C, N_max, ...) inputs and (C, N_max) labels, zero-padded, and the sizes."""
    xs = torch.nn.utils.rnn.pad_sequence([s.x for s in splits], batch_first=True)
    ys = torch.nn.utils.rnn.pad_sequence([s.y for s in splits], batch_first=True)
    return xs, ys, [len(s) for s in splits]


@dataclass
class Schedule:
    """Minibatch indices of a phase for C clients: (T, C, B) indices and sample masks and (T, C) active steps on the
    device, the (T, C) active flags and batch sizes on the host, and each client's number of steps."""

    idx: torch.Tensor
    mask: torch.Tensor
    active: torch.Tensor
    active_host: torch.Tensor
    sizes_host: torch.Tensor
    steps: list[int]

    def width(self, t: int, cols: Sequence[int]) -> int:
        """The width of step ``t`` for the clients at positions ``cols``: their largest batch."""
        return int(self.sizes_host[t, list(cols)].max())


def train_schedule(
    ctxs: Sequence[Any], plans: Sequence[LocalPlan], phase: Phase, sizes: Sequence[int]
) -> list[list[list[torch.Tensor]]]:
    """Each client's steps of a training phase, each the minibatch indices it takes (``phase.per_step`` of them),
    drawn as :func:`~pflnb.fl.training.train_epochs` draws them from the generator of its row's context ``ctxs[i]``."""
    out = []
    for row_ctx, plan, n in zip(ctxs, plans, sizes):
        gen = phase.generator(row_ctx, plan.cid)
        steps: list[list[torch.Tensor]] = []
        for _ in range(phase.n_epochs):
            epoch = batch_indices(n, phase.optim.batch_size, gen, True, phase.optim.drop_last)
            groups = step_groups(list(epoch), phase.per_step) if phase.per_step > 1 else ([idx] for idx in epoch)
            for i, group in enumerate(groups):
                if phase.per_epoch is not None and i >= phase.per_epoch:
                    break
                steps.append(group)
                if phase.max_steps is not None and len(steps) >= phase.max_steps:
                    break
            if phase.max_steps is not None and len(steps) >= phase.max_steps:
                break
        out.append(steps)
    return out


def gradient_schedule(sizes: Sequence[int], batch_size: int) -> list[list[torch.Tensor]]:
    """Each client's batches of a gradient phase: consecutive samples in order, the last one partial."""
    return [[torch.arange(s, min(s + batch_size, n)) for s in range(0, n, batch_size)] for n in sizes]


def build_schedule(batches: list[list[torch.Tensor]], width: int, device: torch.device, dtype: torch.dtype) -> Schedule:
    """Pad per-client batch lists to one (T, C, width) schedule. A client's padded steps (after its last one)
    replay the first two samples of its first batch, masked out of every update."""
    n_clients, n_steps = len(batches), max((len(b) for b in batches), default=0)
    idx = torch.zeros(n_steps, n_clients, width, dtype=torch.long)
    mask = torch.zeros(n_steps, n_clients, width, dtype=dtype)
    active = torch.zeros(n_steps, n_clients, dtype=torch.bool)
    for c, bl in enumerate(batches):
        for t, b in enumerate(bl):
            idx[t, c, : len(b)] = b
            mask[t, c, : len(b)] = 1
            active[t, c] = True
        if len(bl) < n_steps:
            filler = bl[0][:2]
            idx[len(bl) :, c, : len(filler)] = filler
            mask[len(bl) :, c, : len(filler)] = 1
    sizes = mask.sum(2).to(torch.long)
    return Schedule(idx.to(device), mask.to(device), active.to(device), active, sizes, [len(b) for b in batches])


class LiveSet:
    """The chunk positions still stacked in a phase. Once a quarter or more of them have taken their last step, the
    stacked tensors are compacted to the clients still training (so finished clients stop costing compute)."""

    def __init__(self, n: int, device: torch.device) -> None:
        self.pos = list(range(n))
        self.device = device
        self.index = torch.arange(n, device=device)
        self.before = self.index  # the positions before the last compaction

    def shrink(self, active_row: torch.Tensor) -> torch.Tensor | None:
        """Local indices (device) of the clients to keep when this step's ``active_row`` (host, over all chunk
        positions) leaves a quarter or more of the live ones idle; None when no compaction is due."""
        flags = [bool(active_row[p]) for p in self.pos]
        n_active = sum(flags)
        if n_active == 0 or n_active > 0.75 * len(self.pos):
            return None
        keep = [i for i, f in enumerate(flags) if f]
        self.pos = [self.pos[i] for i in keep]
        local = torch.tensor(keep, device=self.device)
        self.before, self.index = self.index, self.index[local]
        return local


# ------------------------------------------------------------------------------------------ functional optimizers


def _bview(flag: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-client (C,) tensor shaped to broadcast against a stacked (C, ...) tensor."""
    return flag.reshape((-1,) + (1,) * (like.dim() - 1))


class FunctionalOptimizer:
    """torch.optim's SGD (momentum, weight decay) or Adam, applied to stacked client parameters; at step t only the
    clients with ``active[t]`` move, the others keep parameters and optimizer state unchanged.

    ``active`` (T, C) is the phase's whole schedule: Adam's per-client step counts and bias corrections are computed
    from it up front in Python floats, as torch.optim computes them. ``lrs``: one learning rate per row (stacked runs
    of several rates, :func:`~pflnb.fl.grouping.row_lrs`); None: the phase's own for every row."""

    def __init__(
        self,
        phase: Phase,
        params: dict[str, torch.Tensor],
        active: torch.Tensor,
        carry: dict[str, Any] | None = None,
        lrs: Sequence[float] | None = None,
    ) -> None:
        o = phase.optim
        self.kind, self.lr, self.momentum, self.wd = o.optimizer, phase.optim.lr, o.momentum, o.weight_decay
        self.lrs = lrs
        if self.kind not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be sgd or adam, got {self.kind!r}")
        self.betas, self.eps = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults (make_optimizer uses them)
        self.buf = {k: torch.zeros_like(v) for k, v in params.items()} if (self.kind == "adam" or self.momentum) else {}
        self.sq = {k: torch.zeros_like(v) for k, v in params.items()} if self.kind == "adam" else {}
        self.offset = [0] * active.shape[1]  # steps each client's optimizer took in earlier phases (a carried state)
        if carry is not None:
            self.buf = {k: carry["buf"][k].clone() for k in self.buf}
            self.sq = {k: carry["sq"][k].clone() for k in self.sq}
            self.offset = list(carry["count"])
        self.full = {"buf": dict(self.buf), "sq": dict(self.sq)}  # full-size: finished rows are written here
        self.pos = torch.arange(active.shape[1], device=active.device)  # chunk positions of the stacked rows
        self.t = 0
        self.cols: torch.Tensor | None = None  # chunk positions of the stacked rows (None: all, in order)
        if self.kind == "adam" and params:
            like = next(iter(params.values()))
            offset = torch.tensor(self.offset, dtype=torch.long)[None, :]
            counts = (active.to("cpu", torch.long).cumsum(0) + offset).clamp(min=1).tolist()
            b1, b2 = self.betas
            lrs = self.lrs if self.lrs is not None else [self.lr] * active.shape[1]
            self.neg_step = torch.tensor([[-(lr / (1 - b1**n)) for lr, n in zip(lrs, row)] for row in counts], dtype=like.dtype)
            self.bc2_sqrt = torch.tensor([[(1 - b2**n) ** 0.5 for n in row] for row in counts], dtype=like.dtype)
            self.neg_step, self.bc2_sqrt = self.neg_step.to(like.device), self.bc2_sqrt.to(like.device)

    def compact(self, local: torch.Tensor, cols: torch.Tensor) -> None:
        """Keep the optimizer state of the stacked rows ``local`` only; ``cols`` are their chunk positions."""
        self._store()
        self.pos = self.pos.index_select(0, local.to(self.pos.device))
        self.buf = {k: v.index_select(0, local) for k, v in self.buf.items()}
        self.sq = {k: v.index_select(0, local) for k, v in self.sq.items()}
        self.cols = cols

    def _store(self) -> None:
        """Write the stacked rows into the full-size state (the optimizer's own tensors) at their chunk positions."""
        for name in ("buf", "sq"):
            for k, v in getattr(self, name).items():
                if v is not self.full[name][k]:
                    self.full[name][k][self.pos] = v

    def carry(self, steps: Sequence[int]) -> dict[str, Any]:
        """The state to continue in a later phase (every client's rows; step counts ``offset + steps``)."""
        self._store()
        return {"buf": dict(self.full["buf"]), "sq": dict(self.full["sq"]), "count": [o + s for o, s in zip(self.offset, steps)]}

    def step(
        self,
        params: dict[str, torch.Tensor],
        grads: dict[str, torch.Tensor],
        active: torch.Tensor,
        lr: torch.Tensor | None = None,
    ) -> None:
        """Replace ``params[k]`` by the updated stacked tensor for the clients in ``active`` (bool, one per row);
        ``lr``: the live rows' learning rates (stacked runs; None: the phase's)."""
        t = self.t
        self.t += 1
        b1, b2 = self.betas
        if self.kind == "adam" and grads:
            neg_step, bc2_sqrt = self.neg_step[t], self.bc2_sqrt[t]
            if self.cols is not None:
                neg_step, bc2_sqrt = neg_step[self.cols], bc2_sqrt[self.cols]
        for k, g in grads.items():
            p = params[k]
            act = _bview(active, p)
            d = torch.add(g, p, alpha=self.wd) if self.wd != 0 else g
            if self.kind == "sgd":
                if self.momentum != 0:
                    buf = self.buf[k] * self.momentum + d
                    self.buf[k] = torch.where(act, buf, self.buf[k])
                    d = buf
                new = torch.add(p, d, alpha=-self.lr) if lr is None else p - _bview(lr, p) * d
            else:
                m = torch.lerp(self.buf[k], d, 1 - b1)
                v = torch.addcmul(self.sq[k] * b2, d, d, value=1 - b2)
                self.buf[k] = torch.where(act, m, self.buf[k])
                self.sq[k] = torch.where(act, v, self.sq[k])
                denom = v.sqrt() / _bview(bc2_sqrt, p) + self.eps
                new = p + _bview(neg_step, p) * m / denom
            params[k] = torch.where(act, new, p)
