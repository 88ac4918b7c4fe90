"""FedHKD (Chen, Wang and Vikalo, "The best of both worlds: accurate global and personalized models through
federated learning with data-free hyper-knowledge distillation", ICLR 2023), as LG-Mix's Table 1 compares it.

The model splits into a representation network R (``features``: h = R(x)) and a classifier G (``head``); Q_τ(z) =
softmax(z/τ) is the soft prediction at temperature τ. After its local training in a round, client k computes its
**hyper-knowledge** on its training split (eval mode): for every class j it holds, the mean representation h̄_k^j
and the mean soft prediction q̄_k^j, with its sample count n_k^j. The server aggregates them class by class, weighted
by the samples:

  H^j = Σ_k n_k^j h̄_k^j / Σ_k n_k^j,      Q^j = Σ_k n_k^j q̄_k^j / Σ_k n_k^j,

and averages the models (FedAvg, ``weights``: training-set sizes). From round 2 on, a client starts from the global
model and minimizes, on each minibatch (x_i, y_i)_{i ≤ B}:

  L = (1/B) Σ_i CE(G(R(x_i)), y_i)
      + λ · (1/|C|) Σ_{j ∈ C} ‖Q_τ(G(H^j)) − Q^j‖₂                 (its classifier on the global representations)
      + γ · (1/B) Σ_i ‖R(x_i) − H^{y_i}‖₂                            (its representations toward the global ones)

(C: the classes with global hyper-knowledge). Round 1 is plain local training (no hyper-knowledge yet), as in the
authors' code. Personalized evaluation, as FedHKD reports it: client k's local model right after its local training
(the global model, before a client's first round); the global model's accuracy on every client is recorded beside it
(``extra``: ``global_val_acc``, ``global_test_acc``).

Choices this package settles (the LG-Mix paper states none for its baselines):

- **Distances**: ``distance="l2"`` is the paper's objective above (unsquared Euclidean norms, averaged over the
  classes and over the minibatch; at a distance of exactly 0, where the norm has no gradient, torch's 0 is taken).
  ``distance="code"`` is the authors' code: λ·KL(Q^j ‖ Q_τ(G(H^j))) averaged over every entry of the |C| × K table
  (``nn.KLDivLoss()``'s mean) and γ·the mean squared error over every entry of the B × d representations
  (``nn.MSELoss()``), a sample of a class without global knowledge counting as zero distance.
- **Defaults**: λ = γ = 0.05 and τ = 0.5, the authors' code's defaults (``option.py``).
- **Classes without knowledge**: a class no client has reported yet is left out of both terms; a class no client of
  this round holds keeps its last global value (the code keeps a dictionary over rounds).
- **G on H^j** runs in eval mode (BN layers of a classifier, if any, use their running statistics and are not updated
  by the class means); the hyper-knowledge is computed in eval mode (as the code).
- **Not reproduced**: the Gaussian noise the clients add to h̄_k^j (a differential-privacy device; the code's default
  σ = 2), the code's gradient clipping (max norm 1.1) and its Adam optimizer (the experiment's optimizer is used, as
  for every arm).

The local step is one plan (slot ``main``, the :class:`HyperKnowledgeDistill` term reading the global hyper-knowledge
as the anchor ``hk``), executed by both client runners; the hyper-knowledge is computed in ``finish_local`` with one
eval-mode pass over the client's training split, the same code in both runners.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.algorithms.partial import WEIGHTS, aggregation_weights
from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import Batch, LocalPlan, Phase, PlanResult, Term
from pflnb.fl.training import evaluate

DISTANCES = ("l2", "code")


@dataclass(frozen=True)
class FedHKDParams:
    """FedHKD: ``lam`` (λ, the soft-prediction term), ``gamma`` (γ, the representation term), ``temperature`` τ of
    the soft predictions, ``distance`` ("l2": the paper's norms; "code": the authors' KL and MSE), ``weights`` of the
    model average."""

    lam: float = 0.05
    gamma: float = 0.05
    temperature: float = 0.5
    distance: str = "l2"
    weights: str = "n_samples"

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        if self.lam < 0 or self.gamma < 0:
            raise ValueError(f"lam and gamma must be >= 0, got {self.lam}, {self.gamma}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.distance not in DISTANCES:
            raise ValueError(f"distance must be one of {DISTANCES}, got {self.distance!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")


@torch.no_grad()
def local_hyper_knowledge(
    module: nn.Module, split: Any, num_classes: int, temperature: float, block: int = 1024
) -> dict[str, torch.Tensor]:
    """Client hyper-knowledge on ``split`` in eval mode: per class j its sample count ``n`` (K,), mean representation
    ``h`` (K, d) and mean soft prediction ``q`` = mean softmax(G(h)/τ) (K, K); zero rows for absent classes."""
    module.eval()
    y = split.y
    n = torch.bincount(y.cpu(), minlength=num_classes).to(torch.float64)
    h_sum = q_sum = None
    for start in range(0, len(y), block):
        x, yb = split.x[start : start + block], y[start : start + block]
        h = module.features(x)
        q = torch.softmax(module.head(h) / temperature, dim=1)
        if h_sum is None:
            h_sum = torch.zeros(num_classes, h.shape[1], dtype=torch.float64, device=h.device)
            q_sum = torch.zeros(num_classes, q.shape[1], dtype=torch.float64, device=h.device)
        h_sum.index_add_(0, yb, h.double())
        q_sum.index_add_(0, yb, q.double())
    dtype = next(p.dtype for p in module.parameters())
    if h_sum is None:  # an empty split: no class held
        device = next(module.parameters()).device
        h_sum = torch.zeros(num_classes, module.feat_dim, dtype=torch.float64, device=device)
        q_sum = torch.zeros(num_classes, num_classes, dtype=torch.float64, device=device)
    div = n.clamp(min=1.0).to(h_sum.device)[:, None]
    return {"n": n.to(h_sum.device), "h": (h_sum / div).to(dtype), "q": (q_sum / div).to(dtype)}


def aggregate_hyper_knowledge(
    previous: Mapping[str, torch.Tensor] | None, uploads: Sequence[Mapping[str, torch.Tensor]]
) -> dict[str, torch.Tensor]:
    """Global hyper-knowledge: per class, the sample-weighted mean of the uploaded class means (H (K, d), Q (K, K));
    classes no upload holds keep ``previous``; ``known`` (K,): 1 for classes with global knowledge, else 0."""
    n = torch.stack([u["n"] for u in uploads])  # (clients, K), float64
    total = n.sum(0)
    held = total > 0
    dtype = uploads[0]["h"].dtype
    out: dict[str, torch.Tensor] = {}
    for key, name in (("h", "H"), ("q", "Q")):
        acc = sum(n[i][:, None] * u[key].double() for i, u in enumerate(uploads))
        mean = (acc / total.clamp(min=1.0)[:, None]).to(dtype)
        old = previous[name] if previous is not None else torch.zeros_like(mean)
        out[name] = torch.where(held[:, None], mean, old)
    old_known = previous["known"] > 0 if previous is not None else torch.zeros_like(held)
    out["known"] = (held | old_known).to(dtype)
    return out


@dataclass(frozen=True)
class HyperKnowledgeDistill(Term):
    """FedHKD's two distillation terms toward the global hyper-knowledge (anchor ``anchor``: ``H``, ``Q``,
    ``known``): λ·(soft predictions of the trained classifier on H against Q) + γ·(representations against H^y), in
    the paper's norms or the code's KL and MSE (``distance``); each part kept (``hk_soft``, ``hk_rep``)."""

    lam: float
    gamma: float
    temperature: float
    distance: str = "l2"
    anchor: str = "hk"
    needs_features = True
    before_head = True  # reads the features and the head's entries before this step's pass (BN statistics)

    def anchors(self) -> tuple[str, ...]:
        return (self.anchor,)

    def loss(self, b: Batch) -> torch.Tensor:
        """λ·L_soft + γ·L_rep (module docstring)."""
        hk = b.anchor(self.anchor)
        H, Q, known = hk["H"], hk["Q"], hk["known"]
        n_known = known.sum().clamp(min=1.0)
        log_q = F.log_softmax(b.own_head(H) / self.temperature, dim=1)
        diff = b.features - H[b.y]
        known_y = known[b.y]
        if self.distance == "l2":
            soft = (torch.linalg.vector_norm(log_q.exp() - Q, dim=1) * known).sum() / n_known
            rep = b.mean(torch.linalg.vector_norm(diff, dim=1) * known_y)
        else:
            kl = torch.xlogy(Q, Q) - Q * log_q  # nn.KLDivLoss(log q, Q) pointwise
            soft = (kl.sum(1) * known).sum() / (n_known * Q.shape[1])
            rep = b.mean((diff * diff).sum(1) * known_y) / diff.shape[1]
        b.keep("hk_soft", soft)
        b.keep("hk_rep", rep)
        return self.lam * soft + self.gamma * rep


@register
class FedHKD(Algorithm):
    """FedHKD (Chen, Wang, Vikalo 2023): FedAvg whose local loss adds λ·(the classifier's soft predictions on the
    global class representations against the global soft predictions) + γ·(the representations against their class's
    global representation); clients share per-class mean representations and soft predictions. Evaluated: each
    client's local model after its local training."""

    name = "fedhkd"
    Params = FedHKDParams

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server: the global model, no hyper-knowledge yet; clients: nothing until their first round."""
        return {"model": S.clone(init_state), "hk": None}, [{} for _ in range(ctx.num_clients)]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Local epochs from the global model (stream ``train``, every parameter): CE, plus the distillation terms
        toward the global hyper-knowledge (anchor ``hk``) once there is one."""
        p, hk = self.params, server.get("hk")
        use = hk is not None and (p.lam > 0 or p.gamma > 0)
        terms = (HyperKnowledgeDistill(p.lam, p.gamma, p.temperature, p.distance),) if use else ()
        anchors = {"hk": hk} if use else {}
        return LocalPlan(cid, {"main": server["model"]}, (Phase(ctx.optim, terms=terms),), anchors)

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Keep the trained model (the personalized model); send it with the client's hyper-knowledge (one eval-mode
        pass over its training split). Metrics: the loss and, with the terms, their two parts per step."""
        new = result.models["main"]
        module = ctx.load(new, "fedhkd-knowledge")
        knowledge = local_hyper_knowledge(module, ctx.client(cid).train, ctx.data.num_classes, self.params.temperature)
        metrics = result.metrics(plan)
        r = result.phases[0]
        for name in ("hk_soft", "hk_rep"):
            rows = r.recorded(name)
            if rows is not None:
                metrics[name] = sum(rows.double().tolist()) / max(r.steps, 1)
        return ClientUpdate(client={"model": new}, message={"state": new, "hk": knowledge}, metrics=metrics)

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """FedAvg of the models (``weights``) and the class-wise sample-weighted hyper-knowledge."""
        cids = sorted(messages)
        if not cids:
            return server
        avg = S.weighted_average([messages[c]["state"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        hk = aggregate_hyper_knowledge(server.get("hk"), [messages[c]["hk"] for c in cids])
        return {**server, "model": avg, "hk": hk}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The client's local model after its last local training (the global model before its first)."""
        return client.get("model", server["model"])

    def extra_metrics(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """The global model's validation and test accuracy on every client (FedHKD's second reported model)."""
        module = ctx.load(server["model"], "fedhkd-global")
        out: dict[str, list[float]] = {"global_val_acc": [], "global_test_acc": []}
        for cid in range(ctx.num_clients):
            data = ctx.client(cid)
            for split in ("val", "test"):
                out[f"global_{split}_acc"].append(evaluate(module, data.split(split))["acc"])
        return out
