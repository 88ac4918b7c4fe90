"""FedRoD (Chen and Chao, "On bridging generic and personalized federated learning", ICLR 2022).

The model is split into a body f (``features``) and a generic head g (``head``), both shared; every client also
keeps a personal head p of the generic head's shape (the paper's linear version, as Fed-CO2 runs it). On a
minibatch (x, y) of client i with class counts n_{i,c} (its training split), with h = f(x):

  generic loss   L_G = −log( n_{i,y} e^{g(h)_y} / Σ_c n_{i,c} e^{g(h)_c} )      (balanced softmax, paper Eq. 5)
  personal loss  L_P = CE( sg[g(h)] + p(sg[h]), y )                           (ERM of the personalized predictor)

(sg: stop-gradient). One optimizer step on L_G + L_P moves f and g by ∇L_G only and p by ∇L_P only (the stop-
gradients separate them), i.e. the two SGD steps of the paper's Algorithm 1 on the same minibatch. The server
averages f and g (every entry of the model, BN included) weighted by the clients' training-set sizes (FedAvg);
p never leaves the client. Client i predicts with g(f(x)) + p_i(f(x)).

Choices this package settles: p starts as a copy of the initial generic head (the same for every client);
absent classes (n_{i,c} = 0) get a prior of −∞ in the balanced softmax, i.e. zero probability, as the paper's
formula gives; ``generic_loss="ce"`` trains g with plain cross-entropy (what the Fed-CO2 code runs as its FedRoD
baseline). A held-out client predicts with the generic model g∘f; when fine-tuned it trains a personal head
(from the initial one) for ``finetune_epochs`` on its train split with f and g frozen.

The local step is a :class:`~pflnb.fl.plan.LocalPlan`: one phase trains the generic model (slot ``main``) with the
:class:`RoDLoss` term and co-trains the personal head (slot ``personal``, the generic model with the client's head)
with the same optimizer, so both runners execute it. Evaluation is a fused plan: the logits of ``main`` plus those of
``personal``, whose body is the generic one.
"""

from __future__ import annotations

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
from pflnb.fl.sequential import plan_module
from pflnb.fl.training import accumulator_dtype, train_epochs

GENERIC_LOSSES = ("bsm", "ce")


@dataclass(frozen=True)
class FedRoDParams:
    """FedRoD: ``generic_loss`` of the generic head ("bsm": balanced softmax, the paper; "ce": plain
    cross-entropy, the Fed-CO2 code's baseline); ``weights`` of the FedAvg aggregation."""

    generic_loss: str = "bsm"
    weights: str = "n_samples"

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        if self.generic_loss not in GENERIC_LOSSES:
            raise ValueError(f"generic_loss must be one of {GENERIC_LOSSES}, got {self.generic_loss!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")


def log_class_prior(y: torch.Tensor, num_classes: int, dtype: torch.dtype) -> torch.Tensor:
    """log n_c of the labels ``y`` per class (−∞ for an absent class): the balanced softmax's logit shift."""
    counts = torch.bincount(y.cpu(), minlength=num_classes)  # counted on the host: exact on every device
    return torch.log(counts.to(device=y.device, dtype=dtype))


def balanced_softmax_loss(logits: torch.Tensor, y: torch.Tensor, log_prior: torch.Tensor) -> torch.Tensor:
    """Mean −log(n_y e^{z_y} / Σ_c n_c e^{z_c}) = CE(z + log n, y) (FedRoD Eq. 5, Ren et al. 2020)."""
    return F.cross_entropy(logits + log_prior.to(logits.dtype), y)


@dataclass(frozen=True)
class RoDLoss(Term):
    """L_G + L_P of the module docstring on one minibatch: the generic model's balanced softmax (``bsm``; else CE) on
    its logits g(h), plus the CE of sg[g(h)] + p(sg[h]) with p the head of the co-trained slot ``personal`` (train
    mode, as the module's). Records both parts (``loss_g``, ``loss_p``)."""

    bsm: bool = True
    personal: str = "personal"
    needs_features = True

    def anchors(self) -> tuple[str, ...]:
        return ("prior",)

    def loss(self, b: Batch) -> torch.Tensor:
        """The sum of both losses (each a batch mean)."""
        h, g = b.features, b.logits
        lg = b.cross_entropy(g + b.anchor("prior")["log_prior"].to(g.dtype), b.y) if self.bsm else b.cross_entropy(g, b.y)
        lp = b.cross_entropy(g.detach() + b.slot_head(self.personal, h.detach()), b.y)
        b.keep("loss_g", lg)
        b.keep("loss_p", lp)
        return lg + lp


class SumOfHeads(nn.Module):
    """Logits g(f(x)) + p(f(x)): the generic model's head plus the personal model's head on the generic body."""

    def __init__(self, generic: nn.Module, personal: nn.Module) -> None:
        super().__init__()
        self.generic, self.personal = generic, personal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The personalized prediction of FedRoD."""
        h = self.generic.features(x)
        return self.generic.head(h) + self.personal.head(h)


@register
class FedRoD(Algorithm):
    """FedRoD (Chen and Chao 2022): shared body and generic head trained with the balanced softmax and averaged
    (FedAvg); a personal head per client trained with CE on generic logits (detached) + personal logits of the
    detached features. Evaluated: generic + personal logits."""

    name = "fedrod"
    Params = FedRoDParams

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server model (body and generic head); each client's personal head a copy of the initial head."""
        head = S.select(init_state, ctx.head_keys)
        server = {"model": S.clone(init_state), "phead_init": S.clone(head)}
        return server, [{"phead": S.clone(head)} for _ in range(ctx.num_clients)]

    def _personal(self, ctx: Any, server: dict[str, Any], phead: S.State) -> nn.Module:
        return ctx.load(S.update(server["model"], phead), "fedrod-personal")

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Local epochs (stream ``train``) of one optimizer on L_G + L_P (:class:`RoDLoss`): the generic model (slot
        ``main``, every parameter) and the personal head (slot ``personal``'s head entries, co-trained); anchor
        ``prior``: log n_{i,c} of the client's training labels."""
        data = ctx.client(cid).train
        heads = tuple(ctx.head_keys)
        term = RoDLoss(self.params.generic_loss == "bsm")
        prior = {"log_prior": log_class_prior(data.y, ctx.data.num_classes, torch.float64)}
        models = {"main": server["model"], "personal": S.update(server["model"], client["phead"])}
        phase = Phase(ctx.optim, terms=(term,), ce=False, co_train=(("personal", heads),))
        return LocalPlan(cid, models, (phase,), {"prior": prior})

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Send the generic model; the client keeps its personal head. Metrics: the mean of each loss over the steps."""
        r = result.phases[0]
        parts = [r.recorded("loss_g"), r.recorded("loss_p")]
        acc = accumulator_dtype(result.models["main"][next(iter(result.models["main"]))].device)
        means = torch.stack(parts, 1).to(acc).mean(0).tolist() if r.steps else [0.0, 0.0]
        return ClientUpdate(
            client={**client, "phead": S.select(result.models["personal"], ctx.head_keys)},
            message={"state": result.models["main"]},
            metrics={"loss": means[0], "personal_loss": means[1], "steps": r.steps},
        )

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """FedAvg of the clients' models (body and generic head), weighted by ``weights``."""
        cids = sorted(messages)
        if not cids:
            return server
        avg = S.weighted_average([messages[c]["state"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        return {**server, "model": avg}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The generic model (body and generic head); the prediction adds the personal head (``eval_module``)."""
        return server["model"]

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """g(f(x)) + p_i(f(x)): the logits of the generic model (slot ``main``) plus those of slot ``personal`` (the
        generic body with the client's personal head)."""
        models = {"main": server["model"], "personal": S.update(server["model"], client["phead"])}
        return LocalPlan(cid, models, fuse=("main", "personal"))

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The module of :meth:`eval_plan`."""
        return plan_module(ctx, self.eval_plan(ctx, cid, server, client))

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: Any, finetune: bool) -> nn.Module:
        """The generic model; fine-tuned: plus a personal head trained from the initial one on the client's train
        split for ``finetune_epochs`` (f and g frozen, eval mode)."""
        generic = ctx.load(server["model"])
        if not finetune:
            return generic
        generic.eval()
        personal = self._personal(ctx, server, server["phead_init"])

        def loss_fn(m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                h = generic.features(x)
                g = generic.head(h)
            return F.cross_entropy(g + m.head(h), y)

        gen = ctx.generator("unseen", data.cid)
        params = [p for n, p in personal.named_parameters() if n in set(ctx.head_keys)]
        train_epochs(personal, data.train, ctx.optim, gen, epochs=ctx.finetune_epochs, params=params, loss_fn=loss_fn)
        return SumOfHeads(generic, personal)
