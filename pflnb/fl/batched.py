"""Batched execution of local plans: the clients of a group trained together with torch.func (their evaluation:
:mod:`pflnb.fl.evaluation`).

The clients' states are stacked along a new first dimension and one ``vmap(grad(...))`` call computes every
client's gradient on its own minibatch; a functional optimizer then updates the stacked parameters. What
makes the result equal to the sequential path (:func:`pflnb.fl.sequential.run_plan`):

- minibatches come from the same seeded generators (``ctx.generator(stream, cid)``) through the same
  :func:`~pflnb.fl.training.batch_indices`, so every client sees the same minibatches in the same order;
- clients with smaller minibatches (a trailing partial batch) are padded to the step's width with a sample mask:
  the loss is the masked mean, and BatchNorm (replaced by :class:`~pflnb.fl.functional.MaskedBatchNorm`) computes its
  batch statistics and running-statistics update over the real samples only, exactly what BN does on the smaller batch;
- clients with fewer steps are padded with replayed minibatches whose update is masked out: parameters,
  momentum/Adam state, step counts and BN buffers (running statistics and ``num_batches_tracked``) are kept
  with ``torch.where`` on padded steps, so weight decay and momentum do not move a finished client;
- the functional SGD (momentum, weight decay) and Adam (per-client step counts) follow ``torch.optim``'s
  update formulas operation by operation.

In float64 the two paths agree to rounding (1e-12 and below); see ``tests/test_runner_batched.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from pflnb.fl.functional import (
    FunctionalModel,
    FunctionalOptimizer,
    LiveSet,
    _bview,
    build_schedule,
    gradient_schedule,
    pad_splits,
    stack_states,
    train_schedule,
    unstack,
)
from pflnb.fl.grouping import row_values
from pflnb.fl.plan import LOSS_KEY, Batch, LocalPlan, Phase, PhaseResult, PlanResult, Term, slot_key, value_key
from pflnb.fl.training import accumulator_dtype

# ------------------------------------------------------------------------------------------ execution


@dataclass
class ChunkResult:
    """The stacked final states by slot, each client's phase results, and the stacked plan values."""

    models: dict[str, dict[str, torch.Tensor]]
    phases: list[list[PhaseResult]]
    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def plan_result(self, i: int, slots: Sequence[str]) -> PlanResult:
        """Client ``i``'s :class:`PlanResult` (states copied out of the stack)."""
        values = {k: v[i].clone() for k, v in self.values.items()}
        return PlanResult({s: unstack(self.models[s], i) for s in slots}, self.phases[i], values)


def _anchor_inputs(plans: Sequence[LocalPlan], names: Sequence[str]) -> tuple[dict, dict]:
    """Anchors for the vmapped step: one shared state (in_dim None) when every plan holds the same object."""
    values, dims = {}, {}
    for name in names:
        states = [p.anchors[name] for p in plans]
        if all(s is states[0] for s in states):
            values[name], dims[name] = {k: v.detach() for k, v in states[0].items()}, None
        else:
            values[name], dims[name] = stack_states(states, list(states[0])), 0
    return values, dims


class _Stack:
    """Stacked per-client tensors of a phase (rows: the live clients) and the full-size outputs finished rows go to.

    The outputs start as the input tensors themselves (no copy): steps replace the stacked tensors rather than
    write into them, so the inputs are only written where finished rows are stored."""

    def __init__(self, live: LiveSet, tensors: dict[str, torch.Tensor]) -> None:
        self.live, self.cur = live, dict(tensors)
        self.out = dict(tensors)

    def compact(self, local: torch.Tensor, extra: list[dict[str, torch.Tensor]]) -> None:
        """Write every row to the outputs, keep rows ``local`` in the stack (and in each dict of ``extra``)."""
        for k, v in self.cur.items():
            if v is not self.out[k]:  # an entry no step has replaced (e.g. a fixed parameter) is already there
                self.out[k][self.live.before] = v
            self.cur[k] = v.index_select(0, local)
        for d in extra:
            for k, v in d.items():
                d[k] = v.index_select(0, local)

    def finish(self) -> dict[str, torch.Tensor]:
        """The outputs with the rows still live written in."""
        for k, v in self.cur.items():
            if v is not self.out[k]:
                self.out[k][self.live.index] = v
        return self.out


def functional_step(
    phase: Phase,
    params: Mapping[str, torch.Tensor],
    grads: Mapping[str, torch.Tensor],
    st: Mapping[str, torch.Tensor],
    lr: float | torch.Tensor | None = None,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """One step of the phase's optimizer (torch.optim's SGD or Adam formulas) on one client's ``params``, with its
    state ``st`` (``buf/<name>``, ``sq/<name>``, the step count ``n``): (new parameters, new state). Written on one
    client's tensors, for a term's ``b.optimize`` under ``vmap``; ``lr``: this row's rate (default: the phase's)."""
    o = phase.optim
    lr = phase.optim.lr if lr is None else lr
    b1, b2, eps = 0.9, 0.999, 1e-8  # torch.optim.Adam's defaults (make_optimizer uses them)
    n = st["n"] + 1
    new_p, new_st = {}, {"n": n}
    for k, g in grads.items():
        p = params[k]
        d = torch.add(g, p, alpha=o.weight_decay) if o.weight_decay != 0 else g
        if o.optimizer == "sgd":
            if o.momentum != 0:
                d = new_st["buf/" + k] = st["buf/" + k] * o.momentum + d
            new_p[k] = p - lr * d if isinstance(lr, torch.Tensor) else torch.add(p, d, alpha=-lr)
        else:
            m = new_st["buf/" + k] = torch.lerp(st["buf/" + k], d, 1 - b1)
            v = new_st["sq/" + k] = torch.addcmul(st["sq/" + k] * b2, d, d, value=1 - b2)
            denom = v.sqrt() / (1 - b2**n).sqrt() + eps
            new_p[k] = p - (lr / (1 - b1**n)) * m / denom
    return new_p, new_st


def optimizer_state(phase: Phase, params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The zero state of :func:`functional_step` for stacked ``params`` (C, ...)."""
    o = phase.optim
    like = next(iter(params.values()))
    st = {"n": torch.zeros(like.shape[0], dtype=like.dtype, device=like.device)}
    for k, p in params.items():
        if o.optimizer == "adam" or o.momentum != 0:
            st["buf/" + k] = torch.zeros_like(p)
        if o.optimizer == "adam":
            st["sq/" + k] = torch.zeros_like(p)
    return st


class _Ops:
    """The runner operations of one client's :class:`~pflnb.fl.plan.Batch` inside ``vmap``: the functional model,
    the sample mask, the anchors, the other slots, the plan values and their optimizer states."""

    def __init__(self, fm: FunctionalModel, phase: Phase, m, anch, slots=None, values=None, opt=None, cols=None, lr=None) -> None:
        self.ms = m if isinstance(m, tuple) else (m,)  # one sample mask per minibatch of the step
        self.fm, self.phase, self.m, self.anch = fm, phase, self.ms[0], anch
        self.lr = phase.optim.lr if lr is None else lr  # this row's learning rate (a tensor for stacked runs)
        self.slots, self.values, self.opt, self.cols = slots or {}, values or {}, opt or {}, cols or {}
        self.new_opt: dict[str, dict[str, torch.Tensor]] = {}
        self.kept: dict[str, torch.Tensor] = {}
        self.slot_buffers: dict[str, dict[str, torch.Tensor]] = {}  # BN buffers of co-trained slots' passes
        self.x: torch.Tensor | None = None

    def anchor(self, name: str):
        return self.anch[name]

    def forward(self, name: str, train: bool, head: bool):
        (h, logits), _ = self.fm(self.anch[name], self.x, self.m, train, features=True)
        return h.detach(), (logits.detach() if head else None)

    def mean(self, v: torch.Tensor, part: int = 0) -> torch.Tensor:
        m = self.ms[part]
        return (v * m.reshape((-1,) + (1,) * (v.dim() - 1))).sum() / m.sum()

    def cross_entropy(self, logits: torch.Tensor, target: torch.Tensor, part: int = 0) -> torch.Tensor:
        return self.mean(F.cross_entropy(logits, target, reduction="none"), part)

    def batchmean(self, values: torch.Tensor) -> torch.Tensor:
        m = self.m
        return (values * m.reshape((-1,) + (1,) * (values.dim() - 1))).sum() / m.sum()

    def head(self, state, features: torch.Tensor) -> torch.Tensor:
        c = self.fm.bn
        saved = c.training, c.new_buffers
        c.training, c.new_buffers = False, {}
        try:
            return functional_call(self.fm.net.net.head, dict(state), (features,))
        finally:
            c.training, c.new_buffers = saved

    def own_head(self, state, features: torch.Tensor) -> torch.Tensor:
        n = len("head.")
        return self.head({k[n:]: v for k, v in state.items() if k.startswith("head.")}, features)

    def keep(self, name: str, value: torch.Tensor) -> None:
        self.kept[name] = value

    def slot_head(self, name: str, features: torch.Tensor) -> torch.Tensor:
        c = self.fm.bn
        saved = c.mask, c.training, c.new_buffers
        c.mask, c.training, c.new_buffers = self.m, True, {}
        try:
            state = {k.partition(".")[2]: v for k, v in self.slots[name].items() if k.startswith("head.")}
            out = functional_call(self.fm.net.net.head, state, (features,), strict=True)
            self.slot_buffers[name] = dict(c.new_buffers)
            return out
        finally:
            c.mask, c.training, c.new_buffers = saved

    def column(self, name: str) -> torch.Tensor:
        if name not in self.cols:
            raise ValueError(f"b.column({name!r}): the plan declares no such column")
        return self.cols[name]

    def slot(self, name: str):
        return self.slots[name]

    def value(self, name: str) -> torch.Tensor:
        return self.values[name]

    def call(self, x, state, train: bool, part: int = 0):
        logits, new_b = self.fm(dict(state), x, self.ms[part], train)
        return logits, new_b

    def grad(self, fn, inputs, has_aux: bool):
        return grad(fn, has_aux=has_aux)(dict(inputs))

    def optimize(self, slot: str, grads):
        params = {k: self.slots[slot][k] for k in grads}
        new_p, self.new_opt[slot] = functional_step(self.phase, params, grads, self.opt[slot], self.lr)
        return new_p


class _TermLoss:
    """A phase's loss and its terms' records and updates for one client, the functions ``vmap`` runs over clients:
    the same :class:`~pflnb.fl.plan.Term` code the sequential path runs, on the functional model's state, with the
    batch mean taken over the client's real samples (mask ``m``)."""

    def __init__(self, fm: FunctionalModel, phase: Phase) -> None:
        self.fm, self.phase = fm, phase
        self.step = 0  # the step index the terms see (the same for every live client: padded steps come last)
        self.updating = [t for t in phase.terms if t.updates]

    def terms(self, rows: Mapping[str, torch.Tensor] | None) -> tuple[Term, ...]:
        """The phase's terms, each float field that varies by row (``rows["term<i>.<name>"]``, stacked runs of
        several hyperparameters) set to this row's value."""
        terms = self.phase.terms
        if not rows or not any(k.startswith("term") for k in rows):
            return terms
        out = []
        for i, t in enumerate(terms):
            mine = {k.partition(".")[2]: v for k, v in rows.items() if k.partition(".")[0] == f"term{i}"}
            if mine:
                t = copy.copy(t)
                for name, v in mine.items():
                    object.__setattr__(t, name, v)  # a frozen dataclass: no __post_init__ checks on a traced value
            out.append(t)
        return tuple(out)

    def __call__(self, state: dict[str, torch.Tensor], x, y, m, anch, cols=None, rows=None) -> tuple[torch.Tensor, dict]:
        """(loss, aux): the masked cross-entropy plus every term's loss; aux: the loss value, the new BN buffers and
        the terms' records. Entries ``slot/name`` of ``state`` are the co-trained slots' (``b.slot`` in the loss)."""
        joint: dict[str, dict[str, torch.Tensor]] = {}
        if self.phase.co_train:
            for k in [k for k in state if "/" in k]:
                s, _, n = k.partition("/")
                joint.setdefault(s, {})[n] = state.pop(k)
        if self.phase.needs_features:
            (h, logits), new_b = self.fm(state, x, m, True, features=True)
        else:
            (logits, new_b), h = self.fm(state, x, m, True), None
        ops = _Ops(self.fm, self.phase, m, anch, joint, cols=cols, lr=(rows or {}).get("lr"))
        ops.x = x
        b = Batch(x, y, state, ops, logits, h, self.step, ops.lr)
        terms = self.terms(rows)
        for t in (t for t in terms if t.records):
            for k, v in (t.record(b) or {}).items():
                ops.keep(k, v.detach())
        loss = (F.cross_entropy(logits, y, reduction="none") * m).sum() / m.sum() if self.phase.ce else None
        for t in terms:
            extra = t.loss(b)
            if extra is not None:
                loss = extra if loss is None else loss + extra
        new_b = {**new_b, **{slot_key(s, k): v for s, bs in ops.slot_buffers.items() for k, v in bs.items()}}
        return loss, {"loss": loss.detach(), "buffers": new_b, "records": ops.kept}

    def update(self, state, x, y, m, anch, slots, values, opt, cols=None, rows=None) -> tuple[dict, dict]:
        """Every term's after-step update of one client (later terms see earlier terms' values) and the new optimizer
        states of the slots the terms trained."""
        out: dict[str, torch.Tensor] = {}
        ops = _Ops(self.fm, self.phase, m, anch, slots, values, opt, cols, (rows or {}).get("lr"))
        parts = tuple(zip(x, y)) if isinstance(x, tuple) else ((x, y),)
        ops.x = parts[0][0]
        for t in (t for t in self.terms(rows) if t.updates):
            b = Batch(*parts[0], {**state, **out}, ops, None, None, self.step, ops.lr, parts)
            new = t.update(b) or {}
            out.update(new)
            for k, v in new.items():  # later terms read the updated slots and values
                if k.startswith("$"):
                    ops.values = {**ops.values, k[1:]: v}
                elif "/" in k and k.partition("/")[0] in ops.slots:
                    s, _, n = k.partition("/")
                    ops.slots = {**ops.slots, s: {**ops.slots[s], n: v}}
        return out, ops.new_opt


def _keep_records(
    n_clients: int, steps: Sequence[int], recs: list[tuple[list[int], dict[str, torch.Tensor], torch.Tensor]]
) -> list[dict[str, list[torch.Tensor]]]:
    """Each client's recorded rows per step (real samples only), from the stacked per-step records."""
    out: list[dict[str, list[torch.Tensor]]] = [{} for _ in range(n_clients)]
    for pos, rec, mk in recs:
        for i, c in enumerate(pos):
            if c is None:
                continue
            real = mk[i] > 0
            for k, v in rec.items():
                out[c].setdefault(k, []).append(v[i].reshape(1) if v.dim() == 1 else v[i][real])  # a scalar per step
    for c in range(n_clients):
        for k in out[c]:
            out[c][k] = out[c][k][: steps[c]]
    return out


def _train_phase(
    ctxs: Sequence[Any],
    fm: FunctionalModel,
    plans: Sequence[LocalPlan],
    phase: Phase,
    slots: dict[str, dict[str, torch.Tensor]],
    values: dict[str, torch.Tensor],
    data: tuple,
    optims: dict[str, dict[str, Any]],
    cols: dict[str, torch.Tensor] | None = None,
    per_row: dict[str, list[float]] | None = None,
) -> list[PhaseResult]:
    """Train slot ``phase.model`` of every client (``slots``, ``values`` stacked; replaced in place by the results;
    ``optims``: the optimizer states of the ``opt_state`` keys, continued and stored; ``cols``: the plans' columns,
    stacked and padded like the samples; ``ctxs``: each row's context; ``per_row``: the values that differ by row,
    stacked runs of several rates or hyperparameters (:func:`~pflnb.fl.grouping.row_values`), else None)."""
    xs, ys, sizes = data
    slot = slots[phase.model]
    n_clients, device = len(plans), xs.device
    dtype = next(v for v in slot.values() if v.is_floating_point()).dtype
    steps_idx = train_schedule(ctxs, plans, phase, sizes)
    parts = [
        build_schedule([[st[j] for st in cl] for cl in steps_idx], phase.optim.batch_size, device, dtype)
        for j in range(phase.per_step)
    ]
    sched = parts[0]
    if not sched.steps or max(sched.steps) == 0:
        return [PhaseResult(0.0, 0) for _ in plans]
    wanted = set(fm.param_names if phase.trainable is None else phase.trainable)
    trainable = [n for n in fm.param_names if n in wanted]
    trainable += [slot_key(s, n) for s, keys in phase.co_train for n in fm.param_names if n in set(keys)]
    fixed = [n for n in fm.param_names if n not in wanted]
    fixed += [
        slot_key(s, k) for s, keys in phase.co_train for k in fm.state_keys if k not in set(keys) or k not in fm.param_names
    ]
    buffers = list(fm.buffer_names)
    anchors, anchor_dims = _anchor_inputs(plans, phase.anchor_names())
    terms = _TermLoss(fm, phase)
    co = phase.slot_names()
    by_optimizer = phase.update == "optimizer"
    scaling = [t for t in phase.terms if t.scales]

    cols = cols or {}
    if cols and phase.per_step > 1:
        raise ValueError("plan columns need phases whose steps take one minibatch (per_step=1)")
    col_dim = 0 if cols else None

    def client_loss(train_p, fixed_p, bufs, x, y, m, anch, c, rows):
        return terms({**fixed_p, **train_p, **bufs}, x, y, m, anch, c, rows)

    per_row = per_row or {}
    row_dim = 0 if per_row else None  # values per row (rate, hyperparameters): stacked inputs like the states
    step = vmap(grad(client_loss, has_aux=True), in_dims=(0, 0, 0, 0, 0, 0, anchor_dims, col_dim, row_dim))
    update = vmap(terms.update, in_dims=(0, 0, 0, 0, anchor_dims, 0, 0, 0, col_dim, row_dim)) if terms.updating else None
    live = LiveSet(n_clients, device)
    extra = {"__total": torch.zeros(n_clients, dtype=accumulator_dtype(device), device=device)}
    for s in co:
        extra.update({slot_key(s, k): v for k, v in slots[s].items()})
        extra.update(
            {"@" + slot_key(s, k): v for k, v in optimizer_state(phase, {k: slots[s][k] for k in fm.param_names}).items()}
        )
    extra.update({value_key(k): v for k, v in values.items()})
    extra.update({"__row." + k: torch.tensor(v, dtype=dtype, device=device) for k, v in per_row.items()})
    stack = _Stack(live, {**slot, **extra})
    cur = stack.cur
    carried = optims.get(phase.opt_state) if phase.opt_state is not None else None
    lrs = per_row.get("lr")
    opt = FunctionalOptimizer(phase, {k: cur[k] for k in trainable} if by_optimizer else {}, sched.active, carried, lrs)
    data_rows = {"xs": xs, "ys": ys, **{"#" + k: v for k, v in cols.items()}}
    recs: list[tuple[list, dict[str, torch.Tensor], torch.Tensor]] = []
    for t in range(len(sched.active_host)):
        local = live.shrink(sched.active_host[t])
        if local is not None:
            stack.compact(local, [data_rows, *(v for k, v in anchors.items() if anchor_dims[k] == 0)])
            opt.compact(local, live.index)
        w = sched.width(t, live.pos)
        ix, m, act = sched.idx[t, live.index, :w], sched.mask[t, live.index, :w], sched.active[t, live.index]
        rows = torch.arange(len(live.pos), device=device)[:, None]
        x, y = data_rows["xs"][rows, ix], data_rows["ys"][rows, ix]
        c = {k: data_rows["#" + k][rows, ix] for k in cols}
        if phase.per_step > 1:  # every minibatch of the step, each with its own width and mask
            sub = [(p.idx[t, live.index, : p.width(t, live.pos)], p.mask[t, live.index, : p.width(t, live.pos)]) for p in parts]
            x = tuple(data_rows["xs"][rows, i] for i, _ in sub)
            y = tuple(data_rows["ys"][rows, i] for i, _ in sub)
            m = tuple(mk for _, mk in sub)
        terms.step = t
        rows_now = {k: cur["__row." + k] for k in per_row} or None
        aux = {"records": {}}
        if by_optimizer:
            grads, aux = step(
                {k: cur[k] for k in trainable},
                {k: cur[k] for k in fixed},
                {k: cur[k] for k in buffers},
                x,
                y,
                m,
                anchors,
                c,
                rows_now,
            )
            for t_ in scaling:  # from the anchors as they are now (stacked ones follow the compaction)
                for k, mult in (t_.grad_scale(anchors) or {}).items():
                    grads[k] = grads[k] * mult
            params = {k: cur[k] for k in trainable}
            opt.step(params, grads, act, rows_now.get("lr") if rows_now else None)
            cur.update(params)
            for k, v in aux["buffers"].items():
                cur[k] = torch.where(_bview(act, v), v, cur[k])
        if update is not None:
            state = {k: cur[k] for k in fm.param_names + buffers}
            co_in = {s: {k: cur[slot_key(s, k)] for k in slots[s]} for s in co}
            opt_in = {s: {k[len(s) + 2 :]: v for k, v in cur.items() if k.startswith("@" + s + "/")} for s in co}
            vals = {k: cur[value_key(k)] for k in values}
            new, new_opt = update(state, x, y, m, anchors, co_in, vals, opt_in, c, rows_now)
            if not by_optimizer:
                aux["loss"] = new.pop(LOSS_KEY)
            new.update({"@" + slot_key(s, k): v for s, d in new_opt.items() for k, v in d.items()})
            for k, v in new.items():
                cur[k] = torch.where(_bview(act, v), v, cur[k])
        total = cur["__total"]
        cur["__total"] = total + torch.where(act, aux["loss"].to(total.dtype), torch.zeros_like(total))
        if aux["records"]:
            pos = [c if bool(sched.active_host[t, c]) else None for c in live.pos]
            recs.append((pos, aux["records"], m))
    out = stack.finish()
    for k in per_row:
        out.pop("__row." + k)
    totals = out.pop("__total").tolist()
    if phase.opt_state is not None:
        optims[phase.opt_state] = opt.carry(sched.steps)
    slots[phase.model] = {k: out[k] for k in slot}
    for s in co:
        slots[s] = {k: out[slot_key(s, k)] for k in slots[s]}
    for k in values:
        values[k] = out[value_key(k)]
    records = _keep_records(n_clients, sched.steps, recs)
    return [
        PhaseResult(totals[c] / sched.steps[c] if sched.steps[c] else 0.0, sched.steps[c], records[c]) for c in range(n_clients)
    ]


def _gradient_phase(
    fm: FunctionalModel, plans: Sequence[LocalPlan], phase: Phase, slot: dict[str, torch.Tensor], data: tuple
) -> tuple[dict[str, torch.Tensor], list[PhaseResult]]:
    xs, ys, sizes = data
    n_clients, device = len(plans), xs.device
    dtype = next(v for v in slot.values() if v.is_floating_point()).dtype
    bsz = phase.batch_size or phase.optim.batch_size
    sched = build_schedule(gradient_schedule(sizes, bsz), bsz, device, dtype)
    names, buffers = fm.param_names, fm.buffer_names
    anchors, anchor_dims = _anchor_inputs(plans, phase.anchor_names())
    terms = _TermLoss(fm, phase)

    def client_loss(params, bufs, x, y, m, anch):
        loss, aux = terms({**params, **bufs}, x, y, m, anch)
        return loss, (aux["loss"], aux["records"])

    step = vmap(grad(client_loss, has_aux=True), in_dims=(0, 0, 0, 0, 0, anchor_dims))
    live = LiveSet(n_clients, device)
    acc = {"__grad." + k: torch.zeros_like(slot[k], dtype=torch.float64) for k in names}
    n = torch.as_tensor(sizes, dtype=torch.float64, device=device)
    stack = _Stack(live, {**acc, "__total": torch.zeros(n_clients, dtype=torch.float64, device=device)})
    cur = stack.cur
    per_client = {"xs": xs, "ys": ys, "n": n, **{k: slot[k] for k in names + buffers}}
    recs: list[tuple[list, dict[str, torch.Tensor], torch.Tensor]] = []
    for t in range(len(sched.active_host)):
        local = live.shrink(sched.active_host[t])
        if local is not None:
            stack.compact(local, [per_client, *(v for k, v in anchors.items() if anchor_dims[k] == 0)])
        w = sched.width(t, live.pos)
        ix, m, act = sched.idx[t, live.index, :w], sched.mask[t, live.index, :w], sched.active[t, live.index]
        rows = torch.arange(len(live.pos), device=device)[:, None]
        x, y = per_client["xs"][rows, ix], per_client["ys"][rows, ix]
        terms.step = t
        grads, (loss, rec) = step({k: per_client[k] for k in names}, {k: per_client[k] for k in buffers}, x, y, m, anchors)
        weight = m.sum(1).to(torch.float64) / per_client["n"]
        for k in names:
            a = cur["__grad." + k]
            cur["__grad." + k] = torch.where(_bview(act, a), a + _bview(weight, a) * grads[k].double(), a)
        cur["__total"] = torch.where(act, cur["__total"] + weight * loss.double(), cur["__total"])
        if rec:
            recs.append(([c if bool(sched.active_host[t, c]) else None for c in live.pos], rec, m))
    out = stack.finish()
    totals = out["__total"].tolist()
    records = _keep_records(n_clients, sched.steps, recs)
    results = [
        PhaseResult(totals[c], 0, records[c], grad=torch.cat([out["__grad." + k][c].reshape(-1) for k in names]))
        for c in range(n_clients)
    ]
    return slot, results


def run_chunk(ctx: Any, fm: FunctionalModel, plans: Sequence[LocalPlan], ctxs: Sequence[Any] | None = None) -> ChunkResult:
    """Execute the plans of one chunk (equal :func:`~pflnb.fl.grouping.plan_signature`) together; states stay stacked in
    the result. ``ctxs``: each plan's own context (its data and generators), when the plans come from several runs; default
    ``ctx`` for every plan."""
    ctxs = [ctx] * len(plans) if ctxs is None else list(ctxs)
    if len(ctxs) != len(plans):
        raise ValueError(f"ctxs must give one context per plan: {len(ctxs)} for {len(plans)} plans")
    first = plans[0]
    keys = fm.state_keys
    slots = {name: stack_states([p.models[name] for p in plans], keys) for name in first.models}
    values = {name: torch.stack([p.values[name].detach() for p in plans]) for name in first.values}
    data = pad_splits([c.client(p.cid).split(p.split) for c, p in zip(ctxs, plans)])
    cols = {k: torch.nn.utils.rnn.pad_sequence([p.columns[k] for p in plans], batch_first=True) for k in first.columns}
    per_client: list[list[PhaseResult]] = [[] for _ in plans]
    optims: dict[str, dict[str, Any]] = {}
    with fm.attrs(first.model_attrs):
        for j, phase in enumerate(first.phases):
            if phase.kind == "gradient":
                slots[phase.model], res = _gradient_phase(fm, plans, phase, slots[phase.model], data)
            else:
                res = _train_phase(ctxs, fm, plans, phase, slots, values, data, optims, cols, row_values(plans, j))
            for c, r in enumerate(res):
                per_client[c].append(r)
    return ChunkResult(slots, per_client, values)
