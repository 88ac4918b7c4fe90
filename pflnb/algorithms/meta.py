"""Meta-learning and Moreau-envelope personalization: Per-FedAvg (first-order MAML) and pFedMe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.algorithms.partial import PartialFedAvg, PartialParams
from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import ClientUpdate
from pflnb.fl.training import accumulator_dtype, batch_indices, epoch_batches


def _grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The minibatch loss (detached, left on the device) and its gradients."""
    loss = F.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return loss.detach().to(accumulator_dtype(loss.device)), grads


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

    def _steps(self, ctx: Any) -> tuple[float, float]:
        lr = ctx.optim.lr
        return (lr if self.params.alpha is None else self.params.alpha, lr if self.params.beta is None else self.params.beta)

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """First-order MAML steps over one pass of (D, D') minibatch pairs per local epoch.

        Not on :func:`~pflnb.fl.training.train_epochs`: a step consumes two minibatches and is not an optimizer
        step on one loss (the gradient at the adapted point is applied at the start point). Losses stay on the
        device until the end of the client's work."""
        alpha, beta = self._steps(ctx)
        model = ctx.load(server["model"])
        model.train()
        data = ctx.client(cid).train
        gen = ctx.generator("train", cid)
        total, steps = torch.zeros((), dtype=accumulator_dtype(ctx.device), device=ctx.device), 0
        for _ in range(ctx.optim.local_epochs):
            batches = list(epoch_batches(data, ctx.optim.batch_size, gen, ctx.optim.drop_last))
            for i in range(0, len(batches) - 1, 2) if len(batches) > 1 else [0]:
                (x1, y1), (x2, y2) = batches[i], batches[min(i + 1, len(batches) - 1)]
                params = list(model.parameters())
                start = [p.detach().clone() for p in params]
                loss, g1 = _grads(model, x1, y1)
                with torch.no_grad():
                    for p, g in zip(params, g1):
                        p -= alpha * g
                _, g2 = _grads(model, x2, y2)
                with torch.no_grad():
                    for p, p0, g in zip(params, start, g2):
                        p.copy_(p0 - beta * g)
                total, steps = total + loss, steps + 1
        return ClientUpdate(
            client=client, message={"state": ctx.state_of(model)}, metrics={"loss": float(total) / max(steps, 1), "steps": steps}
        )

    def _adapt(self, ctx: Any, model: nn.Module, data: Any, key: Any) -> nn.Module:
        alpha, _ = self._steps(ctx)
        gen = ctx.generator("finetune", key)
        model.train()
        for _ in range(self.params.eval_steps):
            idx = next(batch_indices(len(data), ctx.optim.batch_size, gen)).to(data.y.device)
            _, g = _grads(model, data.x[idx], data.y[idx])
            with torch.no_grad():
                for p, gi in zip(model.parameters(), g):
                    p -= alpha * gi
        return model

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The global model after eval_steps adaptation steps on the client's training data."""
        return self._adapt(ctx, ctx.load(server["model"]), ctx.client(cid).train, cid)


@dataclass(frozen=True)
class PFedMeParams(PartialParams):
    """pFedMe: ``lam`` (λ of the Moreau envelope), ``inner_steps`` K and ``personal_lr`` for the personal
    problem (None: the local learning rate), server mixing ``beta``."""

    lam: float = 15.0
    inner_steps: int = 5
    personal_lr: float | None = None
    beta: float = 1.0


@register
class PFedMe(PartialFedAvg):
    """pFedMe (T. Dinh et al. 2020): per minibatch, θ ≈ argmin f(θ) + (λ/2)‖θ − w‖² by K gradient steps, then
    w ← w − ηλ(w − θ); server w ← (1 − β)w + β·avg. Evaluated: the client's personal θ."""

    name = "pfedme"
    Params = PFedMeParams

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server model and a personal θ per client (from the init)."""
        server, clients = super().init(ctx, init_state)
        return server, [{**c, "theta": S.clone(init_state)} for c in clients]

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """pFedMe's bi-level local update; θ is kept by the client, w is sent.

        Not on :func:`~pflnb.fl.training.train_epochs`: each minibatch takes K gradient steps on θ (the inner
        problem, not an optimizer's step) and then moves w. Losses stay on the device until the end."""
        lam, eta = self.params.lam, ctx.optim.lr
        plr = eta if self.params.personal_lr is None else self.params.personal_lr
        theta = ctx.load(server["model"], "personal")
        w = {n: p.detach().clone() for n, p in theta.named_parameters()}
        theta.train()
        gen = ctx.generator("train", cid)
        total, steps = torch.zeros((), dtype=accumulator_dtype(ctx.device), device=ctx.device), 0
        for _ in range(ctx.optim.local_epochs):
            for x, y in epoch_batches(ctx.client(cid).train, ctx.optim.batch_size, gen, ctx.optim.drop_last):
                loss = torch.full((), float("nan"), dtype=total.dtype, device=total.device)
                for _k in range(self.params.inner_steps):
                    loss, g = _grads(theta, x, y)
                    with torch.no_grad():
                        for (n, p), gi in zip(theta.named_parameters(), g):
                            p -= plr * (gi + lam * (p - w[n]))
                with torch.no_grad():
                    for n, p in theta.named_parameters():
                        w[n] -= eta * lam * (w[n] - p)
                total, steps = total + loss, steps + 1
        theta_state = ctx.state_of(theta)
        w_state = S.update(theta_state, w)  # buffers (BN statistics) follow the personal model's
        return ClientUpdate(
            client={**client, "theta": theta_state},
            message={"state": w_state},
            metrics={"loss": float(total) / max(steps, 1), "steps": steps},
        )

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """w ← (1 − β) w + β · weighted average of the clients' w."""
        new = super().aggregate(ctx, server, messages)
        if self.params.beta == 1.0:
            return new
        return {**new, "model": S.mix(new["model"], server["model"], self.params.beta)}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The personal θ."""
        return client["theta"]
