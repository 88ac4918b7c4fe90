"""Meta-learning and Moreau-envelope personalization: Per-FedAvg (first-order MAML) and pFedMe."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from pflnb.algorithms.partial import PartialFedAvg, PartialParams
from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import ClientUpdate
from pflnb.fl.plan import LOSS_KEY, Batch, LocalPlan, Phase, PlanResult, Term, slot_key
from pflnb.fl.sequential import plan_module


def _param_names(ctx: Any) -> tuple[str, ...]:
    return tuple(n for n, _ in ctx.model.named_parameters())


def _loss_on(b: Batch, state: dict[str, torch.Tensor], part: int = 0):
    """The loss of the model with ``state``'s entries (parameters given as the argument) on minibatch ``part``, as a
    function of the parameters for ``b.grad``: (loss, (loss, BN buffers after the pass))."""

    def fn(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, tuple]:
        logits, buffers = b.call({**state, **params}, train=True, part=part)
        loss = b.cross_entropy(logits, b.part(part)[1], part)
        return loss, (loss.detach(), buffers)

    return fn


@dataclass(frozen=True)
class GradientStep(Term):
    """A plain gradient step w ← w − lr·∇f(w) on the minibatch (``update="terms"``; Per-FedAvg's adaptation)."""

    keys: tuple[str, ...]
    lr: float

    def update(self, b: Batch) -> dict[str, torch.Tensor]:
        """The new parameters and BN buffers, and the loss."""
        state = dict(b.state)
        g, (loss, buffers) = b.grad(_loss_on(b, state), {k: state[k] for k in self.keys}, has_aux=True)
        return {**buffers, **{k: state[k] - self.lr * g[k] for k in self.keys}, LOSS_KEY: loss}


@dataclass(frozen=True)
class FirstOrderMAMLStep(Term):
    """Per-FedAvg's step on a pair of minibatches (D, D') (``per_step=2``): w ← w − β∇f_D'(w − α∇f_D(w)); BN
    statistics move on both passes; the loss reported is f_D(w)."""

    keys: tuple[str, ...]
    alpha: float
    beta: float

    def update(self, b: Batch) -> dict[str, torch.Tensor]:
        """The new parameters and BN buffers, and the loss."""
        state = dict(b.state)
        start = {k: state[k] for k in self.keys}
        g1, (loss, buffers) = b.grad(_loss_on(b, state, 0), start, has_aux=True)
        state.update(buffers)
        adapted = {k: start[k] - self.alpha * g1[k] for k in self.keys}
        g2, (_, buffers) = b.grad(_loss_on(b, state, 1), adapted, has_aux=True)
        return {**buffers, **{k: start[k] - self.beta * g2[k] for k in self.keys}, LOSS_KEY: loss}


@dataclass(frozen=True)
class PerFedAvgParams(PartialParams):
    """Per-FedAvg (FO): inner step ``alpha`` and outer step ``beta`` (None: the local learning rate);
    ``eval_steps`` adaptation steps on a training batch before evaluation."""

    alpha: float | None = None
    beta: float | None = None
    eval_steps: int = 1


@register
class PerFedAvg(PartialFedAvg):
    """Per-FedAvg (Fallah et al. 2020), first-order: w ← w − β∇f_D'(w − α∇f_D(w)) on pairs of minibatches;
    each client evaluates the global model after ``eval_steps`` SGD steps (step α) on its own data."""

    name = "per-fedavg"
    Params = PerFedAvgParams
    steps_with = "sgd"  # plain gradient steps (update="terms"): the configured optimizer does not make them
    # Its steps are its own SGD steps of size α and β (the configured optimizer does not move them): set, they replace
    # the learning rate, so an experiment that tunes the lr must leave them unset (paper.Experiment checks this).
    step_params = ("alpha", "beta")

    def _steps(self, ctx: Any) -> tuple[float, float]:
        lr = ctx.optim.lr
        return (lr if self.params.alpha is None else self.params.alpha, lr if self.params.beta is None else self.params.beta)

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """First-order MAML steps from the global model over one pass of (D, D') minibatch pairs per local epoch
        (stream ``train``; :class:`FirstOrderMAMLStep`)."""
        alpha, beta = self._steps(ctx)
        term = FirstOrderMAMLStep(_param_names(ctx), alpha, beta)
        return LocalPlan(cid, {"main": server["model"]}, (Phase(ctx.optim, terms=(term,), update="terms", per_step=2),))

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Send the updated global model."""
        return ClientUpdate(client=client, message={"state": result.models["main"]}, metrics=result.metrics(plan))

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The global model after ``eval_steps`` adaptation steps (step α, stream ``finetune``), each on the first
        minibatch of a fresh shuffle of the client's training data."""
        alpha, _ = self._steps(ctx)
        opt = dataclasses.replace(ctx.optim, drop_last=False)
        term = GradientStep(_param_names(ctx), alpha)
        phase = Phase(opt, stream="finetune", epochs=self.params.eval_steps, terms=(term,), update="terms", per_epoch=1)
        return LocalPlan(cid, {"main": server["model"]}, (phase,) if self.params.eval_steps > 0 else ())

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The module of :meth:`eval_plan`."""
        return plan_module(ctx, self.eval_plan(ctx, cid, server, client))


@dataclass(frozen=True)
class PFedMeParams(PartialParams):
    """pFedMe: ``lam`` (λ of the Moreau envelope), ``inner_steps`` K and ``personal_lr`` for the personal
    problem (None: the local learning rate), server mixing ``beta``."""

    lam: float = 15.0
    inner_steps: int = 5
    personal_lr: float | None = None
    beta: float = 1.0


@dataclass(frozen=True)
class MoreauStep(Term):
    """pFedMe's step on one minibatch: θ ≈ argmin f(θ) + (λ/2)‖θ − w‖² by ``inner_steps`` gradient steps (step
    ``personal_lr``; θ's BN statistics move on every pass), then w ← w − ηλ(w − θ) (w: slot ``slot``); the loss
    reported is the last inner step's."""

    keys: tuple[str, ...]
    lam: float
    inner_steps: int
    personal_lr: float
    lr: float
    slot: str = "w"

    def slots(self) -> tuple[str, ...]:
        return (self.slot,)

    def update(self, b: Batch) -> dict[str, torch.Tensor]:
        """θ's new entries, w's new parameters and the loss."""
        theta, w, lam, plr = dict(b.state), b.slot(self.slot), self.lam, self.personal_lr

        def loss_fn(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, tuple]:
            logits, buffers = b.call({**theta, **params}, train=True)
            loss = b.cross_entropy(logits, b.y)
            return loss, (loss.detach(), buffers)

        loss = torch.full_like(theta[self.keys[0]].flatten()[0], float("nan"))
        for _ in range(self.inner_steps):
            g, (loss, buffers) = b.grad(loss_fn, {k: theta[k] for k in self.keys}, has_aux=True)
            theta.update(buffers)
            theta.update({k: theta[k] - plr * (g[k] + lam * (theta[k] - w[k])) for k in self.keys})
        new_w = {slot_key(self.slot, k): w[k] - self.lr * lam * (w[k] - theta[k]) for k in self.keys}
        return {**theta, **new_w, LOSS_KEY: loss}


@register
class PFedMe(PartialFedAvg):
    """pFedMe (T. Dinh et al. 2020): per minibatch, θ ≈ argmin f(θ) + (λ/2)‖θ − w‖² by K gradient steps, then
    w ← w − ηλ(w − θ); server w ← (1 − β)w + β·avg. Evaluated: the client's personal θ."""

    name = "pfedme"
    Params = PFedMeParams
    steps_with = "sgd"  # plain gradient steps (update="terms"): the configured optimizer does not make them

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server model and a personal θ per client (from the init)."""
        server, clients = super().init(ctx, init_state)
        return server, [{**c, "theta": S.clone(init_state)} for c in clients]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """pFedMe's bi-level local update (stream ``train``): θ (slot ``main``) and w (slot ``w``) both start from the
        global model; each minibatch is one :class:`MoreauStep` (``update="terms"``)."""
        p, eta = self.params, ctx.optim.lr
        plr = eta if p.personal_lr is None else p.personal_lr
        keys = tuple(n for n, _ in ctx.model.named_parameters())
        term = MoreauStep(keys, p.lam, p.inner_steps, plr, eta)
        phase = Phase(ctx.optim, terms=(term,), update="terms")
        return LocalPlan(cid, {"main": server["model"], "w": server["model"]}, (phase,))

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """θ is kept by the client; w is sent (its buffers, BN statistics, follow the personal model's)."""
        theta = result.models["main"]
        w = S.update(theta, S.select(result.models["w"], plan.phases[0].terms[0].keys))
        return ClientUpdate(client={**client, "theta": theta}, message={"state": w}, metrics=result.metrics(plan))

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """w ← (1 − β) w + β · weighted average of the clients' w."""
        new = super().aggregate(ctx, server, messages)
        if self.params.beta == 1.0:
            return new
        return {**new, "model": S.mix(new["model"], server["model"], self.params.beta)}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The personal θ."""
        return client["theta"]
