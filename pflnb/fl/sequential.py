"""The sequential path of a local plan (:mod:`pflnb.fl.plan`): each phase run on the client's modules with the
training loop of :mod:`pflnb.fl.training` (:func:`run_plan`, :func:`run_phase`), the terms called on the module's
parameters, the full-split gradient of a ``gradient`` phase, and the fused model of an evaluation plan
(:func:`plan_module`). The batched runner (:mod:`pflnb.fl.batched`) runs the same plans; its results equal these."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.data import Split
from pflnb.fl import state as S
from pflnb.fl.plan import (
    FUSE_REDUCTIONS,
    LOSS_KEY,
    Batch,
    LocalPlan,
    Phase,
    PhaseResult,
    PlanResult,
    ProxStep,
    Term,
    set_model_attrs,
)
from pflnb.fl.training import LossFn, OptimConfig, cross_entropy_loss, make_optimizer, train_epochs

# ------------------------------------------------------------------------------------------ the sequential path


class _ModuleTerms:
    """A phase's terms executed on modules (the sequential path): the loss function and after-step hook of the
    training path, and the runner operations a :class:`Batch` offers."""

    def __init__(
        self,
        ctx: Any,
        plan: LocalPlan,
        phase: Phase,
        module: nn.Module | None = None,
        slot: Callable[[str], nn.Module] | None = None,
        values: dict[str, torch.Tensor] | None = None,
    ) -> None:
        self.ctx, self.plan, self.phase, self.module, self._slot = ctx, plan, phase, module, slot
        self.values = values if values is not None else {}
        self.anchors = {name: plan.anchors[name] for name in phase.anchor_names()}
        self.refs: dict[str, nn.Module] = {}
        self.moved: dict[str, bool] = {}
        self.records: dict[str, list[torch.Tensor]] = {}
        self.opts: dict[str, torch.optim.Optimizer] = {}
        self.heads: dict[tuple, nn.Module] = {}
        self.step = self.calls = 0  # the index of the current minibatch in the phase, minibatches so far
        self.x: torch.Tensor | None = None
        self.labels: torch.Tensor | None = None  # with plan columns: the split's labels (the path draws indices)
        self.rows: torch.Tensor | None = None  # the current minibatch's sample indices in the split
        self.trained: nn.Module | None = module
        self.head_done = True  # whether this step's pass has run the trained model's head (``own_head`` comes before)

    # ---- the operations of a Batch --------------------------------------------------------------------
    def anchor(self, name: str) -> Mapping[str, torch.Tensor]:
        return self.anchors[name]

    def forward(self, name: str, train: bool, head: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        ref = self.refs.get(name)
        if ref is None or (self.moved.get(name) and not train):  # eval after a train-mode pass: fresh statistics
            ref = self.ctx.load(self.plan.anchors[name], f"plan-ref-{name}")
            ref = self.refs[name] = set_model_attrs(ref, self.plan.model_attrs)
            self.moved[name] = False
        if ref.training != train:
            ref.train(train)
        if train:
            self.moved[name] = True
        with torch.no_grad():
            h = ref.features(self.x).detach()
            return h, (ref.head(h).detach() if head else None)

    @staticmethod
    def mean(values: torch.Tensor, part: int = 0) -> torch.Tensor:
        return torch.mean(values)

    @staticmethod
    def cross_entropy(logits: torch.Tensor, target: torch.Tensor, part: int = 0) -> torch.Tensor:
        return F.cross_entropy(logits, target)

    @staticmethod
    def batchmean(values: torch.Tensor) -> torch.Tensor:
        return values.sum() / values.size(0)

    def column(self, name: str) -> torch.Tensor:
        if self.rows is None:
            raise ValueError(f"b.column({name!r}): the plan declares no columns")
        return self.plan.columns[name][self.rows]

    def head(self, state: Mapping[str, torch.Tensor], features: torch.Tensor) -> torch.Tensor:
        key = tuple(id(v) for v in state.values())  # a frozen head: one eval-mode copy per phase and state
        head = self.heads.get(key)
        if head is None:
            head = copy.deepcopy(self.module.head)
            head.load_state_dict(dict(state))
            head = self.heads[key] = head.eval().requires_grad_(False)
        return head(features)

    def own_head(self, state: Mapping[str, torch.Tensor], features: torch.Tensor) -> torch.Tensor:
        if self.head_done:  # the step's train-mode pass has updated the head's BN statistics in place
            raise RuntimeError("Batch.own_head read after the step's pass ran the head: declare the term before_head")
        head = self.trained.head  # ``state`` holds this module's own parameters: calling it lets the gradient flow
        # the buffers copied: the step's train-mode pass, after this one, updates the running statistics in place,
        # which the backward pass of this eval-mode pass must not see
        buffers = {k: v.clone() for k, v in head.named_buffers()}
        was = head.training
        head.eval()
        try:
            return torch.func.functional_call(head, buffers, (features,), strict=False)
        finally:
            head.train(was)

    def keep(self, name: str, value: torch.Tensor) -> None:
        self.records.setdefault(name, []).append(value.reshape(1) if value.dim() == 0 else value)

    def slot_head(self, name: str, features: torch.Tensor) -> torch.Tensor:
        m = self._slot(name)
        if not m.training:
            m.train()
        return m.head(features)

    def slot(self, name: str) -> dict[str, torch.Tensor]:
        m = self._slot(name)
        return {**dict(m.named_parameters()), **dict(m.named_buffers())}

    def value(self, name: str) -> torch.Tensor:
        return self.values[name]

    def call(self, x: torch.Tensor, state: Mapping[str, torch.Tensor], train: bool, part: int = 0) -> tuple[torch.Tensor, dict]:
        m = self.module
        was = m.training
        m.train(train)
        try:
            logits = torch.func.functional_call(m, dict(state), (x,))
        finally:
            m.train(was)
        return logits, {k: state[k] for k, _ in m.named_buffers() if k in state}

    def grad(self, fn: Callable, inputs: Mapping[str, torch.Tensor], has_aux: bool) -> Any:
        with torch.enable_grad():
            leaves = {k: v.detach().requires_grad_(True) for k, v in inputs.items()}
            out = fn(leaves)
            loss, aux = out if has_aux else (out, None)
            gs = dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values()))))
        return (gs, aux) if has_aux else gs

    def optimize(self, slot: str, grads: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        m = self._slot(slot)
        if slot not in self.opts:
            self.opts[slot] = make_optimizer(m.parameters(), self.phase.optim)
        params = dict(m.named_parameters())
        for k, g in grads.items():
            params[k].grad = g
        self.opts[slot].step()
        for k in grads:
            params[k].grad = None
        return {k: params[k] for k in grads}

    # ---- the training path's hooks --------------------------------------------------------------------
    def labels_of(self, y: torch.Tensor) -> torch.Tensor:
        """The minibatch's labels: ``y`` itself, or, when the path draws sample indices (plan columns), their labels
        (the indices kept for :meth:`column`)."""
        if self.labels is None:
            return y
        self.rows = y
        return self.labels[y]

    def batch(self, m: nn.Module, x: Any, y: Any, logits=None, features=None) -> Batch:
        """The :class:`Batch` of module ``m`` on (x, y) (tuples of minibatches when a step takes several)."""
        parts = tuple(zip(x, y)) if isinstance(x, tuple) else ((x, y),)
        self.x, self.trained = parts[0][0], m
        state = lambda: {**dict(m.named_parameters()), **dict(m.named_buffers())}  # noqa: E731
        return Batch(*parts[0], state, self, logits, features, self.step, self.phase.optim.lr, parts)

    def loss(self, m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the logits plus every term's loss; records the terms' rows (before the step)."""
        self.step = self.calls
        self.calls += 1
        y = self.labels_of(y)
        if self.phase.needs_features:
            h = m.features(x)
            b = self.batch(m, x, y, None, h)
            self.head_done = False
            early = {i: t.loss(b) for i, t in enumerate(self.phase.terms) if t.before_head}
            logits = b.logits = m.head(h)
        else:
            h, logits, early = None, m(x), {}
            b = self.batch(m, x, y, logits, h)
        self.head_done = True
        for t in self.phase.terms:
            if t.records:
                with torch.no_grad():
                    for k, v in (t.record(b) or {}).items():
                        self.keep(k, v.detach())
        loss = F.cross_entropy(logits, y) if self.phase.ce else None
        for i, t in enumerate(self.phase.terms):
            extra = early[i] if i in early else t.loss(b)
            if extra is not None:
                loss = extra if loss is None else loss + extra
        if loss is None:
            raise ValueError("ce=False: no term of the phase gave a loss")
        return loss

    def after_step(self, m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
        """Every term's ``update`` written into the modules' entries and the plan values."""
        y = self.labels_of(y)
        for t in self.phase.terms:
            if t.updates:
                with torch.no_grad():
                    self.write(m, t.update(self.batch(m, x, y)) or {})

    def term_step(self, m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """A step made by the terms (``update="terms"``): every term's update written, the reported loss returned."""
        self.step = self.calls
        self.calls += 1
        y = self.labels_of(y)
        loss = None
        for t in self.phase.terms:
            if t.updates:
                with torch.no_grad():
                    new = dict(t.update(self.batch(m, x, y)) or {})
                    loss = new.pop(LOSS_KEY, loss)
                    self.write(m, new)
        if loss is None:
            raise ValueError(f"update='terms': no term of the phase returned its loss under {LOSS_KEY!r}")
        return loss

    def write(self, m: nn.Module, new: Mapping[str, torch.Tensor]) -> None:
        """Write a term's update: entries of the trained model, of other slots (``slot/name``), values (``$name``)."""
        live: dict[str, dict[str, torch.Tensor]] = {}
        for k, v in new.items():
            if k.startswith("$"):
                self.values[k[1:]] = v.detach()
                continue
            slot, sep, name = k.partition("/")
            if not sep:
                slot, name = "", k
            if slot not in live:
                mod = m if slot == "" else self._slot(slot)
                live[slot] = {**dict(mod.named_parameters()), **dict(mod.named_buffers())}
            target = live[slot][name]
            if target is not v:
                target.copy_(v)

    @property
    def plain(self) -> bool:
        """True when the phase has no terms (the plain cross-entropy path)."""
        return not self.phase.terms


def term_hook(term: Term, anchor: S.State, lr: float):
    """A single term's ``update`` as an after-step hook of the training path (anchor named by the term)."""
    plan = LocalPlan(0, {}, anchors={a: anchor for a in term.anchors()})
    phase = Phase(OptimConfig(lr=lr), terms=(term,))
    return _ModuleTerms(None, plan, phase).after_step


def prox_step_hook(step: ProxStep, anchor: S.State, lr: float):
    """The after-step hook w ← (w + ηλ a)/(1 + ηλ): the exact prox of (λ/2)‖w − a‖² with step η."""
    return term_hook(step, anchor, lr)


def full_gradient(
    model: nn.Module, split: Any, batch_size: int, loss_fn: LossFn = cross_entropy_loss
) -> tuple[float, torch.Tensor]:
    """L(ω) and ∇L(ω) over the whole split in train mode: sample-weighted mean of minibatch losses and
    gradients in order (float64 flat vector over ``model.parameters()``), no update."""
    params = list(model.parameters())
    n = len(split)
    total = 0.0
    grads = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    model.train()
    for start in range(0, n, batch_size):
        x, y = split.x[start : start + batch_size], split.y[start : start + batch_size]
        loss = loss_fn(model, x, y)
        gs = torch.autograd.grad(loss, params)
        w = len(y) / n
        total += w * float(loss.detach())
        for acc, g in zip(grads, gs):
            acc.add_(g.detach().double(), alpha=w)
    return total, torch.cat([g.reshape(-1) for g in grads])


def run_phase(
    ctx: Any,
    plan: LocalPlan,
    phase: Phase,
    module: nn.Module,
    slot: Callable[[str], nn.Module] | None = None,
    values: dict[str, torch.Tensor] | None = None,
    optims: dict[str, torch.optim.Optimizer] | None = None,
) -> PhaseResult:
    """Run one phase of ``plan`` on ``module`` (loaded with the slot's current state) with the training path;
    ``slot(name)`` gives the live module of another slot, ``values`` the plan's current values (updated in place),
    ``optims`` the optimizers of the plan's ``opt_state`` keys (created by the first phase of a key)."""
    split = ctx.client(plan.cid).split(plan.split)
    terms = _ModuleTerms(ctx, plan, phase, module, slot, values)
    loss_fn = cross_entropy_loss if terms.plain else terms.loss
    if plan.columns and not terms.plain and phase.kind == "train":  # draw sample indices: terms read the columns
        if phase.per_step > 1:
            raise ValueError("plan columns need phases whose steps take one minibatch (per_step=1)")
        terms.labels = split.y
        split = Split(split.x, torch.arange(len(split), device=split.y.device))
    if phase.kind == "gradient":
        saved = {k: b.detach().clone() for k, b in module.named_buffers()}
        loss, grad = full_gradient(module, split, phase.batch_size or phase.optim.batch_size, loss_fn)
        with torch.no_grad():
            for k, b in module.named_buffers():
                b.copy_(saved[k])
        return PhaseResult(loss, 0, terms.records, grad=grad)
    wanted = None if phase.trainable is None else set(phase.trainable)
    params = [p for n, p in module.named_parameters() if wanted is None or n in wanted]
    for name, keys in phase.co_train:  # other slots' parameters trained jointly by this phase's optimizer
        if slot is None:
            raise ValueError(f"phase co-trains slot {name!r}: run it with the plan's slots (run_plan)")
        params += [p for n, p in slot(name).named_parameters() if n in set(keys)]
    hook = terms.after_step if any(t.updates for t in phase.terms) else None
    gen = phase.generator(ctx, plan.cid)
    with _grad_scaled(module, phase, terms.anchors):
        if phase.update == "terms":
            m = train_epochs(
                module,
                split,
                phase.optim,
                gen,
                phase.n_epochs,
                loss_fn=terms.term_step,
                max_steps=phase.max_steps,
                backward=False,
                per_step=phase.per_step,
                per_epoch=phase.per_epoch,
            )
        else:
            optimizer = None
            if phase.opt_state is not None:
                optims = {} if optims is None else optims
                if phase.opt_state not in optims:
                    optims[phase.opt_state] = make_optimizer(params, phase.optim)
                optimizer = optims[phase.opt_state]
            m = train_epochs(
                module,
                split,
                phase.optim,
                gen,
                phase.n_epochs,
                params,
                loss_fn,
                None,
                phase.max_steps,
                hook,
                optimizer,
                per_epoch=phase.per_epoch,
            )
    return PhaseResult(m["loss"], m["steps"], terms.records)


@contextlib.contextmanager
def _grad_scaled(module: nn.Module, phase: Phase, anchors: Mapping[str, Mapping[str, torch.Tensor]]) -> Iterator[None]:
    """The terms' gradient multipliers as tensor hooks on ``module``'s parameters for the duration."""
    if not any(t.scales for t in phase.terms):
        yield
        return
    named, handles = dict(module.named_parameters()), []
    for t in phase.terms:
        if t.scales:
            for k, mult in (t.grad_scale(anchors) or {}).items():
                handles.append(named[k].register_hook(lambda g, mult=mult: g * mult))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def run_plan(ctx: Any, plan: LocalPlan) -> PlanResult:
    """Execute ``plan`` on one client, phase after phase, on the context's scratch models (the sequential path)."""
    live: dict[str, nn.Module] = {}

    def slot(name: str) -> nn.Module:
        if name not in live:
            live[name] = set_model_attrs(ctx.load(plan.models[name], name), plan.model_attrs)
        return live[name]

    values = {k: v.detach().clone() for k, v in plan.values.items()}
    optims: dict[str, torch.optim.Optimizer] = {}
    results = [run_phase(ctx, plan, phase, slot(phase.model), slot, values, optims) for phase in plan.phases]
    moved = {ph.model for ph in plan.phases if ph.kind != "gradient"} | {s for ph in plan.phases for s in ph.slot_names()}
    models = {name: (ctx.state_of(live[name]) if name in moved and name in live else st) for name, st in plan.models.items()}
    return PlanResult(models, results, values)


class FusedModel(nn.Module):
    """A module whose logits fuse its members' logits (:func:`fuse_logits`; an evaluation plan's ``fuse``): their sum
    (Fed-CO2's Eq. 3), their mean (``reduction="mean"``: COPA's ensemble) or, with ``log_weights``, their mixture (FedEM)."""

    def __init__(self, *members: nn.Module, reduction: str = "sum", log_weights: torch.Tensor | None = None) -> None:
        super().__init__()
        if reduction not in FUSE_REDUCTIONS:
            raise ValueError(f"reduction must be one of {FUSE_REDUCTIONS}, got {reduction!r}")
        self.members = nn.ModuleList(members)
        self.reduction, self.log_weights = reduction, log_weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The fused logits of the members, in order."""
        return fuse_logits([m(x) for m in self.members], self.reduction, self.log_weights)


def fuse_logits(logits: list[torch.Tensor], reduction: str = "sum", log_weights: torch.Tensor | None = None) -> torch.Tensor:
    """The fused logits of several models (both runners): added in order (Fed-CO2's Eq. 3), divided by their number
    when ``reduction="mean"`` (COPA); with ``log_weights`` (one per model) the log of the mixture of their predictions,
    log Σ_m e^{w_m} softmax(z_m) (FedEM)."""
    if log_weights is not None:
        lw = log_weights.to(logits[0].dtype)
        return torch.logsumexp(torch.stack([lw[i] + F.log_softmax(z, dim=-1) for i, z in enumerate(logits)]), dim=0)
    out = logits[0]
    for z in logits[1:]:
        out = out + z
    return out / len(logits) if reduction == "mean" else out


def plan_module(ctx: Any, plan: LocalPlan) -> nn.Module:
    """The module an evaluation plan evaluates (the sequential path): slot ``main`` after the plan's phases, or the
    sum (mean) of the ``fuse`` slots' logits."""
    if plan.fuse != ("main",):
        if plan.phases:
            raise ValueError("plan_module: a fused evaluation plan has no phases")
        mods = [set_model_attrs(ctx.load(plan.models[s], s), plan.model_attrs) for s in plan.fuse]
        return FusedModel(*mods, reduction=plan.fuse_reduction, log_weights=plan.values[plan.mix] if plan.mix else None)
    module = set_model_attrs(ctx.load(plan.models["main"], "main"), plan.model_attrs)
    for phase in plan.phases:
        if phase.model != "main":
            raise ValueError(f"plan_module: phase on slot {phase.model!r}, expected 'main'")
        run_phase(ctx, plan, phase, module)
    return module
