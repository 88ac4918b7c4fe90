"""Local plans: an algorithm's local work declared as data, so that any client runner can execute it.

A :class:`LocalPlan` names the start state of each model a client trains (``models``: slot → state), the
frozen states its loss terms read (``anchors``), and a sequence of :class:`Phase` s. A phase is one call of the
training path (:func:`pflnb.fl.training.train_epochs`): which model, which parameters are trained, how many
epochs, the optimizer, the generator stream that draws the minibatches (``ctx.generator(stream, cid)``), and
the extra terms of the loss (FedProx's proximal term, a proximal step after each optimizer step, recorded
penultimate features). A ``gradient`` phase computes the full-split loss and gradient without an update (FedPG).

:func:`run_plan` executes a plan on one client with the sequential training path; the batched runner
(:mod:`pflnb.fl.batched`) executes the plans of many clients at once and gives the same result. The
algorithm turns the result into its :class:`~pflnb.fl.algorithm.ClientUpdate` in ``finish_local``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.fl import state as S
from pflnb.fl.training import OptimConfig, cross_entropy_loss, train_epochs

PHASE_KINDS = ("train", "gradient")
BN_MODES = ("eval", "train")


@dataclass(frozen=True)
class Prox:
    """A proximal loss term on ``keys``: (weight/2)·‖w − anchor‖² (``squared``) or (weight/2)·‖w − anchor‖."""

    weight: float
    keys: tuple[str, ...]
    anchor: str = "global"
    squared: bool = True


@dataclass(frozen=True)
class ProxStep:
    """A proximal step after every optimizer step: w ← (w + ηλ·anchor)/(1 + ηλ) on ``keys`` (η: the phase's lr)."""

    lam: float
    keys: tuple[str, ...]
    anchor: str = "global"


@dataclass(frozen=True)
class FeatureRecord:
    """Record the penultimate features of the trained model and of the frozen ``reference`` anchor (BN mode
    ``bn``) on every minibatch, before the step (LG-Mix's Eq. 6); the loss is then head(features(x))."""

    reference: str = "global"
    bn: str = "eval"


@dataclass(frozen=True)
class Phase:
    """One call of the training path on model slot ``model`` (see the module docstring).

    ``trainable``: parameter names trained (None: all); ``stream``: the generator key of the minibatches;
    ``metric``: prefix of this phase's ``loss``/``steps`` metrics; ``kind="gradient"``: loss and full-split
    gradient over batches of ``batch_size`` in order, no update (the model state is left unchanged).
    """

    optim: OptimConfig
    model: str = "main"
    stream: str = "train"
    trainable: tuple[str, ...] | None = None
    epochs: int | None = None
    lr: float | None = None
    max_steps: int | None = None
    prox: Prox | None = None
    after_step: ProxStep | None = None
    record: FeatureRecord | None = None
    kind: str = "train"
    batch_size: int | None = None
    metric: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PHASE_KINDS:
            raise ValueError(f"kind must be one of {PHASE_KINDS}, got {self.kind!r}")
        if self.record is not None and self.record.bn not in BN_MODES:
            raise ValueError(f"record.bn must be one of {BN_MODES}, got {self.record.bn!r}")

    @property
    def n_epochs(self) -> int:
        """Epochs of this phase (the optimizer's local epochs when not set)."""
        return self.optim.local_epochs if self.epochs is None else self.epochs

    @property
    def step_lr(self) -> float:
        """The learning rate of this phase's optimizer."""
        return self.optim.lr if self.lr is None else self.lr


@dataclass
class LocalPlan:
    """A client's local work: start states by slot, frozen anchors, phases run in order on split ``split``,
    and ``info`` the algorithm keeps for ``finish_local`` (runners ignore it)."""

    cid: int
    models: dict[str, S.State]
    phases: tuple[Phase, ...] = ()
    anchors: dict[str, S.State] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    split: str = "train"


@dataclass
class PhaseResult:
    """What a phase produced: mean loss and steps; recorded features (trained, reference); a gradient phase's
    flat float64 gradient."""

    loss: float
    steps: int
    features: tuple[torch.Tensor, torch.Tensor] | None = None
    grad: torch.Tensor | None = None


@dataclass
class PlanResult:
    """Final states by slot and one :class:`PhaseResult` per phase."""

    models: dict[str, S.State]
    phases: list[PhaseResult]

    def metrics(self, plan: LocalPlan) -> dict[str, float]:
        """``<metric>loss`` and ``<metric>steps`` of every training phase, later phases overwriting earlier ones."""
        out: dict[str, float] = {}
        for phase, r in zip(plan.phases, self.phases):
            if phase.kind == "train":
                out[f"{phase.metric}loss"], out[f"{phase.metric}steps"] = r.loss, r.steps
        return out


def prox_regularizer(prox: Prox, anchor: S.State):
    """FedProx's term as a regularizer of a module: (w/2)·Σ‖p − a‖² over ``prox.keys`` (or its square root)."""
    keys = set(prox.keys)
    ref = {n: anchor[n].detach() for n in prox.keys}
    mu, squared = prox.weight, prox.squared

    def reg(model: nn.Module) -> torch.Tensor:
        sq = sum(((p - ref[n]) ** 2).sum() for n, p in model.named_parameters() if n in keys)
        return 0.5 * mu * (sq if squared else torch.sqrt(sq + 1e-12))

    return reg


def prox_step_hook(step: ProxStep, anchor: S.State, lr: float):
    """The after-step hook w ← (w + ηλ a)/(1 + ηλ): the exact prox of (λ/2)‖w − a‖² with step η."""
    keys = set(step.keys)
    eta, lam = lr, step.lam

    def hook(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in keys:
                    p.copy_((p + eta * lam * anchor[n]) / (1.0 + eta * lam))

    return hook


def full_gradient(model: nn.Module, split: Any, batch_size: int) -> tuple[float, torch.Tensor]:
    """L(ω) and ∇L(ω) over the whole split in train mode: sample-weighted mean of minibatch losses and
    gradients in order (float64 flat vector over ``model.parameters()``), no update."""
    params = list(model.parameters())
    n = len(split)
    total = 0.0
    grads = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    model.train()
    for start in range(0, n, batch_size):
        x, y = split.x[start : start + batch_size], split.y[start : start + batch_size]
        loss = F.cross_entropy(model(x), y)
        gs = torch.autograd.grad(loss, params)
        w = len(y) / n
        total += w * float(loss.detach())
        for acc, g in zip(grads, gs):
            acc.add_(g.detach().double(), alpha=w)
    return total, torch.cat([g.reshape(-1) for g in grads])


def run_phase(ctx: Any, plan: LocalPlan, phase: Phase, module: nn.Module) -> PhaseResult:
    """Run one phase of ``plan`` on ``module`` (loaded with the slot's current state) with the training path."""
    split = ctx.client(plan.cid).split(plan.split)
    if phase.kind == "gradient":
        saved = {k: b.detach().clone() for k, b in module.named_buffers()}
        loss, grad = full_gradient(module, split, phase.batch_size or phase.optim.batch_size)
        with torch.no_grad():
            for k, b in module.named_buffers():
                b.copy_(saved[k])
        return PhaseResult(loss, 0, grad=grad)
    wanted = None if phase.trainable is None else set(phase.trainable)
    params = [p for n, p in module.named_parameters() if wanted is None or n in wanted]
    reg = prox_regularizer(phase.prox, plan.anchors[phase.prox.anchor]) if phase.prox is not None else None
    hook = None
    if phase.after_step is not None:
        hook = prox_step_hook(phase.after_step, plan.anchors[phase.after_step.anchor], phase.step_lr)
    loss_fn = cross_entropy_loss
    feats: list[torch.Tensor] = []
    ref_feats: list[torch.Tensor] = []
    if phase.record is not None:
        ref = ctx.load(plan.anchors[phase.record.reference], f"plan-ref-{phase.record.reference}")
        ref.train(phase.record.bn == "train")

        def loss_fn(m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            h = m.features(x)
            feats.append(h.detach())
            with torch.no_grad():
                ref_feats.append(ref.features(x).detach())
            return F.cross_entropy(m.head(h), y)

    gen = ctx.generator(phase.stream, plan.cid)
    m = train_epochs(module, split, phase.optim, gen, phase.n_epochs, params, loss_fn, reg, phase.lr, phase.max_steps, hook)
    features = (torch.cat(feats), torch.cat(ref_feats)) if feats else None
    return PhaseResult(m["loss"], m["steps"], features=features)


def run_plan(ctx: Any, plan: LocalPlan) -> PlanResult:
    """Execute ``plan`` on one client, phase after phase, on the context's scratch models (the sequential path)."""
    live: dict[str, nn.Module] = {}
    results = []
    for phase in plan.phases:
        if phase.model not in live:
            live[phase.model] = ctx.load(plan.models[phase.model], phase.model)
        results.append(run_phase(ctx, plan, phase, live[phase.model]))
    models = {slot: (ctx.state_of(live[slot]) if slot in live else state) for slot, state in plan.models.items()}
    return PlanResult(models, results)
