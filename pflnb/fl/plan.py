"""Local plans: an algorithm's local work declared once, as data and plain tensor functions, so that any client
runner can execute it.

A :class:`LocalPlan` names the start state of each model a client trains (``models``: slot → state), the
frozen states its loss terms read (``anchors``), and a sequence of :class:`Phase` s. A phase is one call of the
training path: which model, which parameters are trained, how many epochs, the optimizer, the generator stream that
draws the minibatches (``ctx.generator(stream, cid)``), and its open :class:`Term` s. A ``gradient`` phase computes
the full-split loss and gradient without an update (FedPG).

A phase's loss is the cross-entropy of the trained model's logits (unless ``ce=False``) plus the ``loss`` of each of
its terms; a term may also ``record`` rows on every step, scale gradients (``grad_scale``), and ``update`` entries
after every optimizer step: of the trained model, of another slot it trains with the phase's optimizer (APFL's v),
of the plan's per-client ``values`` (APFL's α); with ``update="terms"`` it makes the whole step (pFedMe, Per-FedAvg,
whose steps take two minibatches: ``per_step``). Terms are
written once, with plain tensor operations on a :class:`Batch`: the trained model's state as a functional mapping
(name → tensor), the minibatch, the model's outputs, the phase's anchors, and the batch reductions (``mean``,
``cross_entropy``). The sequential path (:func:`pflnb.fl.sequential.run_plan`) calls them on the module's parameters;
the batched runner (:mod:`pflnb.fl.batched`) calls the same functions under ``torch.func.vmap`` over clients, where
``mean`` is the masked mean over a client's real samples. :class:`Prox` (FedProx), :class:`ProxStep` (Ditto's proximal step) and
:class:`FeatureRecord` (LG-Mix's Eq. 6) are terms like any other. The algorithm turns the result into its
:class:`~pflnb.fl.algorithm.ClientUpdate` in ``finish_local``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pflnb.fl import state as S
from pflnb.fl.training import OptimConfig

PHASE_KINDS = ("train", "gradient")
UPDATES = ("optimizer", "terms")
LOSS_KEY = "#loss"  # the key of the reported loss in a term's update when the terms make the step
BN_MODES = ("eval", "train")
FUSE_REDUCTIONS = ("sum", "mean")


class Batch:
    """What a :class:`Term` sees of one step, the same in both runners.

    ``x``, ``y``: the minibatch; ``state``: the trained model's parameters and buffers (name → tensor; gradients flow
    through the parameters in ``loss``); ``logits`` and ``features`` (the penultimate features, when the phase asks
    for them) of the trained model; ``step``: the client's step index in the phase; ``lr``: the phase's learning rate.
    The rest is provided by the runner (``ops``): anchors, batch reductions, and, in ``update``, the other model slots
    and values of the plan, a functional forward pass, gradients and the phase's optimizer on another slot.
    """

    def __init__(
        self,
        x: torch.Tensor | None,
        y: torch.Tensor | None,
        state: Mapping[str, torch.Tensor] | Callable[[], Mapping[str, torch.Tensor]],
        ops: Any,
        logits: torch.Tensor | None = None,
        features: torch.Tensor | None = None,
        step: int = 0,
        lr: float = 0.0,
        parts: tuple[tuple[torch.Tensor, torch.Tensor], ...] | None = None,
    ) -> None:
        self.x, self.y, self.logits, self.features, self.step, self.lr = x, y, logits, features, step, lr
        self._state, self._ops = state, ops
        self.parts = parts if parts is not None else ((x, y),)

    @property
    def state(self) -> Mapping[str, torch.Tensor]:
        """The trained model's parameters and buffers by name."""
        if callable(self._state):
            self._state = self._state()
        return self._state

    def anchor(self, name: str) -> Mapping[str, torch.Tensor]:
        """The frozen anchor state ``name`` of the plan."""
        return self._ops.anchor(name)

    def forward(self, anchor: str, train: bool = False, head: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(features, logits) of the frozen anchor model ``anchor`` on this minibatch (BN in train mode when
        ``train``), without gradient; logits None unless ``head``."""
        return self._ops.forward(anchor, train, head)

    def column(self, name: str) -> torch.Tensor:
        """The rows of the plan's per-sample column ``name`` (:attr:`LocalPlan.columns`) for this minibatch's samples."""
        return self._ops.column(name)

    def part(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) of minibatch ``i`` of a step that takes several (``Phase.per_step``; 0 is ``x``, ``y``)."""
        return self.parts[i]

    def mean(self, values: torch.Tensor, part: int = 0) -> torch.Tensor:
        """Mean of per-sample ``values`` over the samples of minibatch ``part``."""
        return self._ops.mean(values, part)

    def cross_entropy(self, logits: torch.Tensor, target: torch.Tensor, part: int = 0) -> torch.Tensor:
        """Mean cross-entropy over the samples of minibatch ``part``."""
        return self._ops.cross_entropy(logits, target, part)

    def batchmean(self, values: torch.Tensor) -> torch.Tensor:
        """Σ of per-sample ``values`` (rows: the samples) over the batch's samples, divided by their number (as
        ``F.kl_div(..., reduction="batchmean")``)."""
        return self._ops.batchmean(values)

    def head(self, state: Mapping[str, torch.Tensor], features: torch.Tensor) -> torch.Tensor:
        """Logits of the model's ``head`` with entries ``state`` (names relative to the head) on ``features``, in eval
        mode (a frozen head: BN layers use its running statistics)."""
        return self._ops.head(state, features)

    def slot_head(self, name: str, features: torch.Tensor) -> torch.Tensor:
        """Logits of the head of slot ``name`` (a slot the phase co-trains, :attr:`Phase.co_train`) on ``features``, in
        train mode (from ``loss``): gradients flow into the slot's trained entries, and its BN running statistics
        move and are kept in the slot."""
        return self._ops.slot_head(name, features)

    def own_head(self, features: torch.Tensor) -> torch.Tensor:
        """Logits of the trained model's own ``head`` (its current entries, the gradient flowing into them) on
        ``features`` other than the minibatch's (FedHKD's global class representations), in eval mode: BN layers of
        the head use its running statistics from before this step's pass and are not updated. A term that reads it
        sets ``before_head`` (on the sequential path its loss is then built before the step's pass runs the head)."""
        return self._ops.own_head(self.state, features)

    def keep(self, name: str, value: torch.Tensor) -> None:
        """Record ``value`` (detached; a scalar per step, or per-sample rows) under ``name`` from within ``loss``."""
        self._ops.keep(name, value.detach())

    def slot(self, name: str) -> Mapping[str, torch.Tensor]:
        """The current state of model slot ``name``: in ``update``, a slot the term names in ``slots``; in ``loss``, the
        entries of a slot the phase co-trains (:attr:`Phase.co_train`), through which gradients flow."""
        return self._ops.slot(name)

    def value(self, name: str) -> torch.Tensor:
        """The current value of the plan's per-client tensor ``name`` (in ``update``)."""
        return self._ops.value(name)

    def call(
        self, state: Mapping[str, torch.Tensor], train: bool = True, part: int = 0
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(logits, BN buffers after the pass) of the model with ``state`` on minibatch ``part`` (in ``update``)."""
        return self._ops.call(self.parts[part][0], state, train, part)

    def grad(
        self, fn: Callable[[dict[str, torch.Tensor]], Any], inputs: Mapping[str, torch.Tensor], has_aux: bool = False
    ) -> Any:
        """The gradient of the scalar ``fn(inputs)`` with respect to every entry of ``inputs`` (in ``update``); with
        ``has_aux``, ``fn`` returns (scalar, aux) and this (gradient, aux)."""
        return self._ops.grad(fn, inputs, has_aux)

    def optimize(self, slot: str, grads: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The parameters of ``slot`` after one step of the phase's optimizer with ``grads`` (its state carried over
        the phase's steps; in ``update``)."""
        return self._ops.optimize(slot, grads)


class Term:
    """An open part of a phase's local step, written once with plain tensor operations on a :class:`Batch`.

    Subclasses are frozen dataclasses (phases are compared to group clients) and override what they need:
    ``loss`` (added to the phase's loss), ``record`` (per-sample rows kept for ``finish_local``, e.g. features),
    ``update`` (new values of some parameters after every optimizer step); ``anchors`` names the anchors read and
    ``needs_features`` asks the runner for the trained model's penultimate features.
    """

    needs_features: bool = False
    per_row: tuple[str, ...] = ()  # float fields a stacked step may take per row (pure tensor arithmetic in the term)
    before_head: bool = False  # the loss reads ``b.features`` (and ``b.own_head``), not ``b.logits``: on the sequential
    # path it is built before the trained model's head, which fixes the order in which the backward pass adds up the
    # features' gradient, and lets ``own_head`` read the head's BN statistics before the step's pass updates them

    def anchors(self) -> tuple[str, ...]:
        """Names of the plan anchors this term reads."""
        return ()

    def slots(self) -> tuple[str, ...]:
        """Other model slots of the plan this term reads and updates in ``update`` (trained by ``b.optimize``)."""
        return ()

    def loss(self, b: Batch) -> torch.Tensor | None:
        """This term's part of the loss (None: nothing)."""
        return None

    def record(self, b: Batch) -> dict[str, torch.Tensor] | None:
        """Per-sample rows (first dimension: the batch) recorded on this step, before the update (None: nothing)."""
        return None

    def grad_scale(self, anchors: Mapping[str, Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor] | None:
        """Multipliers of some parameters' gradients before each optimizer step (rows of 0 freeze them), from the
        phase's anchors (None: nothing)."""
        return None

    def update(self, b: Batch) -> dict[str, torch.Tensor] | None:
        """New values after the optimizer step (``b.state``: the updated state; None: nothing): the trained model's
        entries by name, another slot's as ``slot/name`` (:func:`slot_key`), a plan value's as ``$name``."""
        return None

    @property
    def records(self) -> bool:
        """Whether this term records rows."""
        return type(self).record is not Term.record

    @property
    def updates(self) -> bool:
        """Whether this term updates parameters after each step."""
        return type(self).update is not Term.update

    @property
    def scales(self) -> bool:
        """Whether this term scales gradients."""
        return type(self).grad_scale is not Term.grad_scale


def slot_key(slot: str, name: str) -> str:
    """The key of entry ``name`` of model slot ``slot`` in a term's ``update``."""
    return f"{slot}/{name}"


def value_key(name: str) -> str:
    """The key of the plan value ``name`` in a term's ``update``."""
    return f"${name}"


@dataclass(frozen=True)
class Prox(Term):
    """A proximal loss term on ``keys``: (weight/2)·‖w − anchor‖² (``squared``) or (weight/2)·‖w − anchor‖."""

    weight: float
    keys: tuple[str, ...]
    anchor: str = "global"
    squared: bool = True
    per_row = ("weight",)

    def anchors(self) -> tuple[str, ...]:
        return (self.anchor,)

    def loss(self, b: Batch) -> torch.Tensor:
        """(w/2)·Σ‖p − a‖² over ``keys`` (or its square root)."""
        state, a = b.state, b.anchor(self.anchor)
        sq = sum(((state[k] - a[k].detach()) ** 2).sum() for k in self.keys)
        return 0.5 * self.weight * (sq if self.squared else torch.sqrt(sq + 1e-12))


@dataclass(frozen=True)
class ProxStep(Term):
    """A proximal step after every optimizer step: w ← (w + ηλ·anchor)/(1 + ηλ) on ``keys`` (η: the phase's lr)."""

    lam: float
    keys: tuple[str, ...]
    anchor: str = "global"
    per_row = ("lam",)

    def anchors(self) -> tuple[str, ...]:
        return (self.anchor,)

    def update(self, b: Batch) -> dict[str, torch.Tensor]:
        """The exact prox of (λ/2)‖w − a‖² with step η."""
        state, a, eta, lam = b.state, b.anchor(self.anchor), b.lr, self.lam
        return {k: (state[k] + eta * lam * a[k]) / (1.0 + eta * lam) for k in self.keys}


@dataclass(frozen=True)
class GradScale(Term):
    """Gradients multiplied entry-wise by the anchor ``anchor``'s tensors (broadcast; a 0 row freezes that row's
    gradient, as FedFac's ablation does) before each optimizer step."""

    anchor: str = "grad_scale"

    def anchors(self) -> tuple[str, ...]:
        return (self.anchor,)

    def grad_scale(self, anchors: Mapping[str, Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        return dict(anchors[self.anchor])


@dataclass(frozen=True)
class FeatureRecord(Term):
    """Record the penultimate features of the trained model (``h``) and of the frozen ``reference`` anchor (BN mode
    ``bn``; ``h_ref``) on every minibatch, before the step (LG-Mix's Eq. 6); the loss is then head(features(x))."""

    reference: str = "global"
    bn: str = "eval"
    needs_features = True

    def __post_init__(self) -> None:
        if self.bn not in BN_MODES:
            raise ValueError(f"record.bn must be one of {BN_MODES}, got {self.bn!r}")

    def anchors(self) -> tuple[str, ...]:
        return (self.reference,)

    def record(self, b: Batch) -> dict[str, torch.Tensor]:
        """The trained model's and the reference's features on the minibatch."""
        return {"h": b.features, "h_ref": b.forward(self.reference, self.bn == "train", head=False)[0]}


@dataclass(frozen=True)
class Phase:
    """One call of the training path on model slot ``model`` (see the module docstring).

    ``trainable``: parameter names trained (None: all); ``stream``: the generator key of the minibatches;
    ``metric``: prefix of this phase's ``loss``/``steps`` metrics; ``terms``: the open terms of the loss and step;
    ``kind="gradient"``: loss and full-split gradient over batches of ``batch_size`` in order, no update (the model
    state is left unchanged); ``update="terms"``: no cross-entropy step by the phase's optimizer, the terms' ``update``
    makes the whole step on each minibatch and returns the loss to report under :data:`LOSS_KEY` (pFedMe);
    ``per_step``: minibatches a step takes (:func:`~pflnb.fl.training.step_groups`; Per-FedAvg's pairs), ``per_epoch``:
    the most steps of an epoch (one minibatch of a fresh shuffle per epoch with 1: Per-FedAvg's adaptation);
    ``ce=False``: no cross-entropy in the loss (the terms give all of it); ``opt_state``: phases with the same key
    continue one optimizer, its state carried over (Fed-CO2's two passes per model); ``co_train``: (slot, parameter
    names) of other slots trained jointly by the phase's optimizer on the phase's loss, which reads them through
    ``b.slot`` (FedRoD's personal head); ``stream`` may be a tuple (name, *key): the generator
    ``ctx.generator(name, cid, *key)`` (FedEM's stream per component).
    """

    optim: OptimConfig
    model: str = "main"
    stream: str | tuple[str | int, ...] = "train"
    trainable: tuple[str, ...] | None = None
    epochs: int | None = None
    max_steps: int | None = None
    terms: tuple[Term, ...] = ()
    kind: str = "train"
    batch_size: int | None = None
    metric: str = ""
    update: str = "optimizer"
    per_step: int = 1
    per_epoch: int | None = None
    ce: bool = True
    opt_state: str | None = None
    co_train: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in PHASE_KINDS:
            raise ValueError(f"kind must be one of {PHASE_KINDS}, got {self.kind!r}")
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {self.update!r}")
        if self.per_step < 1 or (self.per_step > 1 and self.update != "terms"):
            raise ValueError(f"per_step must be >= 1 (above 1 only with update='terms'), got {self.per_step}")
        o = self.optim
        if self.update == "terms" and (o.optimizer != "sgd" or o.momentum or o.weight_decay):
            # no silent fallback: the terms' own steps (Per-FedAvg's α/β, pFedMe's) are plain gradient steps
            warnings.warn(
                f"update='terms' (Per-FedAvg, pFedMe): the terms make plain gradient steps; the configured optimizer "
                f"({o.optimizer}, momentum {o.momentum}, weight decay {o.weight_decay}) is not used",
                UserWarning,
                stacklevel=3,
            )
        bad = [t for t in self.terms if not isinstance(t, Term)]
        if bad:
            raise TypeError(f"terms must be Term instances, got {bad!r}")
        if self.co_train and (self.kind != "train" or self.update != "optimizer"):
            raise ValueError("co_train needs a training phase whose optimizer makes the step (update='optimizer')")
        if any(slot == self.model for slot, _ in self.co_train):
            raise ValueError(f"co_train names the phase's own model slot {self.model!r}")

    def generator(self, ctx: Any, cid: int) -> torch.Generator:
        """The generator of this phase's minibatches for client ``cid``: ``ctx.generator(stream, cid)``, or
        ``ctx.generator(name, cid, *key)`` for a tuple stream (name, *key)."""
        if isinstance(self.stream, tuple):
            return ctx.generator(self.stream[0], cid, *self.stream[1:])
        return ctx.generator(self.stream, cid)

    @property
    def n_epochs(self) -> int:
        """Epochs of this phase (the optimizer's local epochs when not set)."""
        return self.optim.local_epochs if self.epochs is None else self.epochs

    @property
    def needs_features(self) -> bool:
        """Whether a term reads the trained model's penultimate features (the forward pass is then split)."""
        return any(t.needs_features for t in self.terms)

    def anchor_names(self) -> list[str]:
        """The anchors the phase's terms read, sorted."""
        return sorted({a for t in self.terms for a in t.anchors()})

    def slot_names(self) -> list[str]:
        """The other model slots the phase's terms update or the phase co-trains, sorted."""
        return sorted({a for t in self.terms for a in t.slots()} | {s for s, _ in self.co_train})


@dataclass
class LocalPlan:
    """A client's local work: start states by slot, frozen anchors, phases run in order on split ``split``,
    ``fuse``: in an evaluation plan, the slots whose logits are summed (Fed-CO2's Eq. 3; default: ``main``), or
    averaged with ``fuse_reduction="mean"`` (COPA's ensemble of classifiers),
    ``values``: per-client tensors the terms update (e.g. APFL's α), ``columns``: per-sample tensors aligned with the
    split's samples (first dimension: the split's size) that terms read by minibatch (``b.column``; FedEM's
    responsibilities), ``model_attrs``: attributes of the model set for
    this client's passes (pMixFed-Hetero's ``active_depth``; clients with different ones are batched apart), and
    ``info`` the algorithm keeps for ``finish_local`` (runners ignore it); ``mix``: in a fused evaluation plan, the
    plan value holding one log-weight per ``fuse`` slot, the logits then being log Σ_m e^{w_m} softmax(z_m) (a mixture
    of the slots' predictions, FedEM's) rather than the sum."""

    cid: int
    models: dict[str, S.State]
    phases: tuple[Phase, ...] = ()
    anchors: dict[str, S.State] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    split: str = "train"
    values: dict[str, torch.Tensor] = field(default_factory=dict)
    columns: dict[str, torch.Tensor] = field(default_factory=dict)
    model_attrs: tuple[tuple[str, Any], ...] = ()
    fuse: tuple[str, ...] = ("main",)
    mix: str | None = None
    fuse_reduction: str = "sum"

    def __post_init__(self) -> None:
        if self.fuse_reduction not in FUSE_REDUCTIONS:
            raise ValueError(f"fuse_reduction must be one of {FUSE_REDUCTIONS}, got {self.fuse_reduction!r}")


def set_model_attrs(module: nn.Module, attrs: tuple[tuple[str, Any], ...]) -> nn.Module:
    """``module`` with the plan's ``model_attrs`` set."""
    for name, value in attrs:
        setattr(module, name, value)
    return module


@dataclass
class PhaseResult:
    """What a phase produced: mean loss and steps; the rows its terms recorded (name → one tensor per step, the
    client's real samples only); a gradient phase's flat float64 gradient."""

    loss: float
    steps: int
    records: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    grad: torch.Tensor | None = None

    def recorded(self, name: str, from_step: int = 0) -> torch.Tensor | None:
        """The rows recorded under ``name`` on steps ``from_step`` on, concatenated (None when there are none)."""
        rows = self.records.get(name, [])[from_step:]
        return torch.cat(rows) if rows else None

    @property
    def features(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """A :class:`FeatureRecord`'s features (trained, reference) over every step, or None."""
        h, r = self.recorded("h"), self.recorded("h_ref")
        return None if h is None or r is None else (h, r)


@dataclass
class PlanResult:
    """Final states by slot, one :class:`PhaseResult` per phase, and the final plan values."""

    models: dict[str, S.State]
    phases: list[PhaseResult]
    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def metrics(self, plan: LocalPlan) -> dict[str, float]:
        """``<metric>loss`` and ``<metric>steps`` of every training phase, later phases overwriting earlier ones."""
        out: dict[str, float] = {}
        for phase, r in zip(plan.phases, self.phases):
            if phase.kind == "train":
                out[f"{phase.metric}loss"], out[f"{phase.metric}steps"] = r.loss, r.steps
        return out
