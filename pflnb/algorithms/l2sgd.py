"""L2SGD (Hanzely and Richtárik 2020): loopless local gradient descent on a mixture of global and local models."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import LocalPlan, Phase, PlanResult
from pflnb.fl.training import batches_per_epoch


@dataclass(frozen=True)
class L2SGDParams:
    """L2SGD: ``lam`` is λ of the penalty λψ(x) = (λ/2n)Σ‖x_i − x̄‖²; ``p`` the probability of an averaging step;
    ``alpha`` the paper's step size α (None: the paper's theory step α = 1/ℒ, ℒ = (1/n)·max{L/(1−p), λ/p}, with
    L = 1/η for the configured local learning rate η); ``local_steps`` the local steps per round (None: the
    paper's expected run of local steps between two averaging steps, round((1−p)/p))."""

    lam: float = 1.0
    p: float = 0.1
    alpha: float | None = None
    local_steps: int | None = None

    def validate(self) -> None:
        """Check λ ≥ 0, 0 < p < 1, α > 0 and local_steps ≥ 1."""
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if not 0.0 < self.p < 1.0:
            raise ValueError(f"p must be in (0, 1), got {self.p}")
        if self.alpha is not None and self.alpha <= 0:
            raise ValueError(f"alpha must be > 0 (or None), got {self.alpha}")
        if self.local_steps is not None and self.local_steps < 1:
            raise ValueError(f"local_steps must be >= 1 (or None), got {self.local_steps}")


@register
class L2SGD(Algorithm):
    """L2SGD (Hanzely & Richtárik 2020, "Federated learning of a mixture of global and local models", Alg. 1 L2GD
    with stochastic local gradients): min_x (1/n)Σ f_i(x_i) + (λ/2n)Σ‖x_i − x̄‖², x̄ = (1/n)Σ x_i. Each step draws
    ξ ~ Bernoulli(p): ξ = 0 → every client takes a local step on its loss only, x_i ← x_i − α/(n(1−p))·∇f_i(x_i);
    ξ = 1 → every client moves toward the average, x_i ← x_i − αλ/(np)·(x_i − x̄). Evaluated: the local x_i.

    At this package's round granularity a round is the paper's expected run between two averaging steps:
    K = round((1−p)/p) local minibatch SGD steps (learning rate α/(n(1−p))), then one averaging step (the round's
    communication). With the default α = 1/ℒ (L = 1/η) the local learning rate is min{η, p/(λ(1−p))} and the
    averaging weight θ = αλ/(np) = min{ηλ(1−p)/p, 1}, independent of n; an explicit ``alpha`` uses n = the number
    of clients in federation. x̄ is the uniform average (the paper's ψ) of the round's sampled clients (all
    clients at full participation, as in the paper); clients not sampled keep their x_i. The paper leaves λ and p
    free (its optimal p* = λ/(L+λ) makes θ = 1, a full average, i.e. local SGD with no personalization); the
    defaults λ = 1, p = 0.1 give 9 local steps and θ = 0.45 at η = 0.05. Held-out clients start from x̄.
    The local work is a declared plan (one phase of K steps), so the batched runner trains it.
    """

    name = "l2sgd"
    Params = L2SGDParams

    # ---- the paper's step sizes at this round's learning rate ------------------------------------
    def step_size(self, ctx: Any) -> float:
        """The paper's α: the given one, else 1/ℒ with ℒ = (1/n)·max{L/(1−p), λ/p} and L = 1/η."""
        if self.params.alpha is not None:
            return float(self.params.alpha)
        p, lam, n = self.params.p, self.params.lam, ctx.num_clients
        return n / max(1.0 / (ctx.optim.lr * (1.0 - p)), lam / p)

    def local_lr(self, ctx: Any) -> float:
        """Learning rate of a local step: α/(n(1−p))."""
        return self.step_size(ctx) / (ctx.num_clients * (1.0 - self.params.p))

    def averaging_weight(self, ctx: Any) -> float:
        """θ = αλ/(np): the averaging step is x_i ← x_i − θ(x_i − x̄)."""
        return self.step_size(ctx) * self.params.lam / (ctx.num_clients * self.params.p)

    def n_local_steps(self) -> int:
        """Local steps per round: ``local_steps``, else the expected run round((1−p)/p) (at least 1)."""
        if self.params.local_steps is not None:
            return self.params.local_steps
        return max(1, round((1.0 - self.params.p) / self.params.p))

    # ---- hooks -------------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server x̄ and every client's x_i, all from the init."""
        return {"model": S.clone(init_state)}, [{"model": S.clone(init_state)} for _ in range(ctx.num_clients)]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """K minibatch SGD steps on f_i from x_i with learning rate α/(n(1−p)) (as many epochs as K needs)."""
        k = self.n_local_steps()
        per_epoch = batches_per_epoch(ctx.n_train(cid), ctx.optim.batch_size, ctx.optim.drop_last)
        epochs = math.ceil(k / max(per_epoch, 1))
        phase = Phase(dataclasses.replace(ctx.optim, lr=self.local_lr(ctx)), epochs=epochs, max_steps=k)
        return LocalPlan(cid, {"main": client["model"]}, (phase,))

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """The client keeps its new x_i and sends it."""
        new = result.models["main"]
        return ClientUpdate(client={**client, "model": new}, message={"state": new}, metrics=result.metrics(plan))

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """x̄: the uniform average of the sampled clients' x_i."""
        cids = sorted(messages)
        if not cids:
            return server
        return {**server, "model": S.weighted_average([messages[c]["state"] for c in cids])}

    def after_aggregate(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
        """The averaging step x_i ← x_i − θ(x_i − x̄) = (1 − θ)x_i + θx̄ (every floating entry, BN statistics too)."""
        theta = self.averaging_weight(ctx)
        return {**client, "model": S.mix(client["model"], server["model"], 1.0 - theta)}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The client's local model x_i."""
        return client["model"]

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """The round's local learning rate and averaging weight θ."""
        return {"local_lr": self.local_lr(ctx), "averaging_weight": self.averaging_weight(ctx)}
