"""FedEM (Marfoq, Neglia, Bellet, Kameni and Vidal, "Federated multi-task learning under a mixture of
distributions", NeurIPS 2021).

M shared component models θ_1..θ_M; client i keeps mixture weights π_i (uniform at the start). In a round, client i
with training samples (x_s, y_s), s = 1..n_i, and ℓ_{m,s} = CE(h_{θ_m}(x_s), y_s) (components in eval mode):

  E-step   q_s(m) = π_{i,m} e^{−ℓ_{m,s}} / Σ_{m'} π_{i,m'} e^{−ℓ_{m',s}}        (paper Alg. 1, line 5)
  π update π_{i,m} ← (1/n_i) Σ_s q_s(m)                                      (line 6)
  M-step   for each m: local SGD epochs on Σ_{s∈B} q_s(m) ℓ_{m,s} / |B| per minibatch B   (line 7)

and the server averages each component over the round's clients weighted by their training-set sizes (FedAvg,
line 9). Client i predicts p(y|x) = Σ_m π_{i,m} softmax(h_{θ_m}(x))_y; its logits here are the log of that
mixture, so the reported loss is the mixture's negative log-likelihood.

Choices this package settles: M = 3 (the paper's default in its experiments); the E-step runs once per round
before the local epochs, and each minibatch loss is the q-weighted sum divided by the batch size (the official
code's client step); component 1 is the run's initial model and components m ≥ 2 are re-initialized with
PyTorch's default layer initialization from a seed derived from (run seed, m), so the components differ (identical
components would stay identical under EM); component m's minibatches come from stream ("train", cid, m). A
held-out client keeps the components fixed and uses uniform π; fine-tuned, it runs ``finetune_epochs`` E-step/π
updates on its train split (the paper's new-client protocol: learn the mixture weights only).

The local work is a :class:`~pflnb.fl.plan.LocalPlan`: the E-step (forward passes of the received components in
eval mode, no training) runs when the plan is made, its responsibilities become the plan's per-sample columns
``q0``..``q{M-1}``, and the M-step is one phase per component (slot ``c{m}``, stream ("train", m)) whose
:class:`WeightedCE` term reads them, so both runners execute it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.algorithms.partial import WEIGHTS, aggregation_weights
from pflnb.algorithms.registry import register
from pflnb.data.federated import Split
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.engine import derive_seed
from pflnb.fl.plan import Batch, LocalPlan, Phase, PlanResult, Term
from pflnb.fl.sequential import FusedModel, plan_module


@dataclass(frozen=True)
class FedEMParams:
    """FedEM: ``components`` M (the paper's default 3); ``weights`` of the per-component FedAvg aggregation."""

    components: int = 3
    weights: str = "n_samples"

    def validate(self) -> None:
        """Check M ≥ 1 and the aggregation weights."""
        if not isinstance(self.components, int) or self.components < 1:
            raise ValueError(f"components must be an integer >= 1, got {self.components!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")


@torch.no_grad()
def sample_losses(model: nn.Module, split: Split, block: int = 1024) -> torch.Tensor:
    """Per-sample cross-entropy ℓ_s of ``model`` in eval mode on ``split`` (float64, the split's order)."""
    model.eval()
    out = [
        F.cross_entropy(model(split.x[s : s + block]), split.y[s : s + block], reduction="none").double()
        for s in range(0, len(split), block)
    ]
    return torch.cat(out)


def e_step(losses: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """Responsibilities q (n, M): q_s(m) ∝ π_m e^{−ℓ_{m,s}} from losses (M, n) and weights π (M,) (FedEM Alg. 1)."""
    return torch.softmax(torch.log(pi)[:, None] - losses, dim=0).T


@dataclass(frozen=True)
class WeightedCE(Term):
    """The M-step's loss: the batch mean of q_s·ℓ_s, q the plan column ``column`` (a component's responsibilities)."""

    column: str

    def loss(self, b: Batch) -> torch.Tensor:
        """Σ_{s∈B} q_s(m) ℓ_{m,s} / |B|."""
        q = b.column(self.column).to(b.logits.dtype)
        return b.mean(q * F.cross_entropy(b.logits, b.y, reduction="none"))


def _slot(m: int) -> str:
    return f"c{m}"


@register
class FedEM(Algorithm):
    """FedEM (Marfoq et al. 2021): M shared components averaged by FedAvg; each client's mixture weights π by EM
    (E-step responsibilities, π = their mean, M-step SGD on the responsibility-weighted loss). Evaluated: the
    π-weighted mixture of the components' probabilities."""

    name = "fedem"
    Params = FedEMParams

    def _fresh(self, ctx: Any, init_state: S.State, m: int) -> S.State:
        """Component m's initial state: PyTorch's default initialization of every layer, seeded by (seed, m)."""
        model = copy.deepcopy(ctx.model).cpu()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(ctx.seed, "fedem-component", m))
            for module in model.modules():
                if module is not model and hasattr(module, "reset_parameters"):
                    module.reset_parameters()
        return {k: v.detach().to(init_state[k].device).clone() for k, v in model.state_dict().items()}

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """M components (the run's init, then re-initialized ones) and uniform π_i = 1/M for every client."""
        n = self.params.components
        comps = [S.clone(init_state)] + [self._fresh(ctx, init_state, m) for m in range(1, n)]
        return {"components": comps}, [{"pi": [1.0 / n] * n} for _ in range(ctx.num_clients)]

    def _models(self, ctx: Any, comps: list[S.State]) -> list[nn.Module]:
        return [ctx.load(state, f"fedem-{m}") for m, state in enumerate(comps)]

    def _pi(self, ctx: Any, pi: list[float]) -> torch.Tensor:
        return torch.tensor(pi, dtype=torch.float64, device=ctx.device)

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The E-step and π update on the client's train split (forward passes only), then the M-step as one phase per
        component on the responsibility-weighted loss (module docstring)."""
        data = ctx.client(cid).train
        comps = server["components"]
        pi = self._pi(ctx, client["pi"])
        losses = torch.stack([sample_losses(m, data) for m in self._models(ctx, comps)])
        nll = -torch.logsumexp(torch.log(pi)[:, None] - losses, dim=0).mean()
        q = e_step(losses, pi)
        phases = tuple(
            Phase(ctx.optim, _slot(m), ("train", m), terms=(WeightedCE(f"q{m}"),), ce=False) for m in range(len(comps))
        )
        return LocalPlan(
            cid,
            {_slot(m): state for m, state in enumerate(comps)},
            phases,
            info={"pi": q.mean(0).tolist(), "nll": float(nll)},
            columns={f"q{m}": q[:, m].contiguous() for m in range(len(comps))},
        )

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Send the components; the client keeps its new π. Metrics: the components' mean losses summed, their steps
        summed, and the mixture's negative log-likelihood before the round."""
        total, steps = 0.0, 0
        for r in result.phases:
            total, steps = total + r.loss, steps + r.steps
        return ClientUpdate(
            client={**client, "pi": plan.info["pi"]},
            message={"components": [result.models[_slot(m)] for m in range(len(plan.phases))]},
            metrics={"loss": total, "steps": steps, "nll": plan.info["nll"]},
        )

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Each component: the weighted average (``weights``) of the round's clients' copies."""
        cids = sorted(messages)
        if not cids:
            return server
        w = aggregation_weights(ctx, cids, self.params.weights)
        comps = [S.weighted_average([messages[c]["components"][m] for c in cids], w) for m in range(self.params.components)]
        return {**server, "components": comps}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The first component (the prediction is the mixture: ``eval_module``)."""
        return server["components"][0]

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The mixture Σ_m π_{i,m} softmax(h_{θ_m}(x)) of the server's components (slots ``c{m}``) with the client's π:
        a fused plan with log-weights log π (its logits are the log of the mixture)."""
        comps = server["components"]
        log_pi = torch.log(self._pi(ctx, client["pi"]))
        slots = tuple(_slot(m) for m in range(len(comps)))
        models = {_slot(m): state for m, state in enumerate(comps)}
        return LocalPlan(cid, models, values={"log_pi": log_pi}, fuse=slots, mix="log_pi")

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The module of :meth:`eval_plan`."""
        return plan_module(ctx, self.eval_plan(ctx, cid, server, client))

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: Any, finetune: bool) -> nn.Module:
        """The mixture with uniform π; fine-tuned: π from ``finetune_epochs`` E-step/π updates on the client's
        train split (components fixed)."""
        models = self._models(ctx, server["components"])
        n = self.params.components
        pi = torch.full((n,), 1.0 / n, dtype=torch.float64, device=ctx.device)
        if finetune:
            losses = torch.stack([sample_losses(m, data.train) for m in models])
            for _ in range(ctx.finetune_epochs):
                pi = e_step(losses, pi).mean(0)
        return FusedModel(*models, log_weights=torch.log(pi))

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """Every client's mixture weights π."""
        return {"pi": [list(c["pi"]) for c in clients]}
