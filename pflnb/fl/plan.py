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
``cross_entropy``). The sequential path (:func:`run_plan`) calls them on the module's parameters; the batched runner
(:mod:`pflnb.fl.batched`) calls the same functions under ``torch.func.vmap`` over clients, where ``mean`` is the
masked mean over a client's real samples. :class:`Prox` (FedProx), :class:`ProxStep` (Ditto's proximal step) and
:class:`FeatureRecord` (LG-Mix's Eq. 6) are terms like any other. The algorithm turns the result into its
:class:`~pflnb.fl.algorithm.ClientUpdate` in ``finish_local``.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.data import Split
from pflnb.fl import state as S
from pflnb.fl.training import LossFn, OptimConfig, cross_entropy_loss, make_optimizer, train_epochs

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
