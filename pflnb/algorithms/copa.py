"""COPA (Wu and Gong, "Collaborative optimization and aggregation for decentralized domain generalization and
adaptation", ICCV 2021), as Fed-CO2 runs it as a feature-skew baseline.

The model splits into a feature extractor f (``features``) and a classifier (``head``). Every client i keeps its own
domain-specific classifier c_i; the feature extractor is shared. On a minibatch (x, y) of client i, with h = f(x):

  L_i = CE(c_i(h), y) + w · Σ_{j≠i} CE(c̄_j(h), y)        ("collaboration of frozen classifiers")

where c̄_j are the other clients' classifiers as the server holds them (frozen, eval mode: their BN layers, if any,
use their running statistics), w = ``gen_weight`` (1 in COPA and in Fed-CO2's code), summed over the N − 1 foreign
classifiers (``gen_reduction="mean"`` averages them). One optimizer trains f and c_i together. The server averages
the feature extractors (FedAvg; ``weights``: training-set sizes, or 1/N as Fed-CO2's feature-skew code) and collects
every client's classifier (they are uploaded every round and never averaged). The model is the ensemble: a client
(any client, and a held-out one) predicts with the **mean of the logits** of all N classifiers on the shared
features, (1/N) Σ_j c_j(f(x)), in client order.

Choices this package settles:

- **Ensemble**: mean of logits (what Fed-CO2's ``COPA_test`` computes: the own head's logits plus the N − 1 others',
  divided by N), not the mean of softmax probabilities; accuracy would differ only where the two disagree on the
  arg-max, the reported cross-entropy is that of the averaged logits. Every client evaluates the same universal
  model (Fed-CO2: "evaluate its performance on each individual training client using the learned universal model"),
  built from the server's copies of the classifiers, which equal the clients' own (each is uploaded right after it
  is trained). COPA is therefore not personalized in its prediction (``personalized = False``).
- **BatchNorm**: every entry of the feature extractor is averaged, BN affine parameters and running statistics
  included (Fed-CO2's ``communication`` for COPA: every non-head key, counters from one client). COPA's paper
  replaces BN by hybrid batch-instance normalization to make the averaged extractor domain-invariant; Fed-CO2's
  comparison runs plain BN, and so do we (the network is the experiment's, the same for every arm). BN layers inside
  the classifier (Fed-CO2's networks have BN1d in their FC block) stay with the classifier, on the client.
- **Classifier**: the model's ``head`` (for Fed-CO2's networks the whole FC block, the classifier its own
  inter-client transfer ships). Fed-CO2's COPA network had a single linear head after two BN-free FC layers; we keep
  the arms' common network instead.
- Round 1 uses the initial classifiers as the frozen foreign ones (as Fed-CO2's code, and its own L_gen); a client
  not sampled in a round keeps its classifier, and the server its last upload.
- COPA's prediction-agreement mechanism is for unsupervised adaptation and has no part here.

The local step is one plan (slot ``main``: the shared extractor with the client's classifier; the foreign
classifiers are Fed-CO2's :class:`~pflnb.algorithms.fedco2.ForeignHeads` term), and the ensemble is a fused
evaluation plan (one slot per classifier, ``fuse_reduction="mean"``), so both client runners execute it (the
sequential path runs the shared extractor once for all classifiers: the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from pflnb.algorithms.fedco2 import REDUCTIONS, ForeignHeads
from pflnb.algorithms.partial import WEIGHTS, aggregation_weights
from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import LocalPlan, Phase, PlanResult
from pflnb.fl.sequential import fuse_logits

HEAD_PREFIX = "head."


@dataclass(frozen=True)
class COPAParams:
    """COPA: ``gen_weight`` w of the frozen foreign classifiers' cross-entropy, ``gen_reduction`` over them (sum:
    COPA and Fed-CO2's code; mean), ``weights`` of the feature extractors' average."""

    gen_weight: float = 1.0
    gen_reduction: str = "sum"
    weights: str = "n_samples"

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        if self.gen_weight < 0:
            raise ValueError(f"gen_weight must be >= 0, got {self.gen_weight}")
        if self.gen_reduction not in REDUCTIONS:
            raise ValueError(f"gen_reduction must be one of {REDUCTIONS}, got {self.gen_reduction!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")


class HeadEnsemble(nn.Module):
    """The mean of several classifiers' logits on one feature extractor's features, computed once (the module of
    COPA's fused evaluation plan, whose slots share the extractor: the same numbers, one extractor pass)."""

    def __init__(self, body: nn.Module, heads: list[nn.Module]) -> None:
        super().__init__()
        self.body, self.heads = body, nn.ModuleList(heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(1/N) Σ_j c_j(f(x)), summed in order."""
        h = self.body.features(x)
        return fuse_logits([head(h) for head in self.heads], "mean")


def ensemble_slot(j: int) -> str:
    """The evaluation plan's slot of classifier ``j`` (slot ``main`` for the first)."""
    return "main" if j == 0 else f"copa-head-{j}"


@register
class COPA(Algorithm):
    """COPA (Wu and Gong 2021): shared feature extractor averaged (FedAvg, BN included), a classifier per client
    trained with CE plus the CE of the other clients' frozen classifiers on its features; prediction: the mean of
    the logits of every client's classifier on the shared features."""

    name = "copa"
    Params = COPAParams
    personalized = False

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server: the model (its head entries unused) and a copy of every client's classifier (the initial one);
        clients: their classifier."""
        head = S.select(init_state, ctx.head_keys)
        server = {"model": S.clone(init_state), "heads": {cid: S.clone(head) for cid in range(ctx.num_clients)}}
        return server, [{"head": S.clone(head)} for _ in range(ctx.num_clients)]

    def body_keys(self, ctx: Any) -> list[str]:
        """The shared feature extractor's entries (everything but the head, BN included)."""
        head = set(ctx.head_keys)
        return [k for k in ctx.model.state_dict() if k not in head]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Local epochs (stream ``train``, every parameter) of CE + w·Σ_{j≠i} CE of the frozen foreign classifiers
        (anchor ``heads``) from the shared extractor with the client's classifier."""
        p = self.params
        terms: tuple = ()
        anchors: dict[str, S.State] = {}
        if p.gen_weight > 0 and ctx.num_clients > 1:
            others = [server["heads"][j] for j in sorted(server["heads"]) if j != cid]
            n = len(HEAD_PREFIX)
            anchors["heads"] = {f"{i}/{k[n:]}": v for i, h in enumerate(others) for k, v in h.items()}
            terms = (ForeignHeads(len(others), p.gen_weight, p.gen_reduction),)
        start = S.update(server["model"], client["head"])
        return LocalPlan(cid, {"main": start}, (Phase(ctx.optim, terms=terms),), anchors)

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Send the feature extractor and the classifier; keep the classifier. Metrics: the loss (CE + w·L_gen)
        and L_gen per step."""
        new = result.models["main"]
        head = S.select(new, ctx.head_keys)
        metrics = result.metrics(plan)
        gen = result.phases[0].recorded("gen")
        if gen is not None:
            metrics["gen"] = sum(gen.double().tolist()) / max(result.phases[0].steps, 1)
        message = {"state": S.select(new, self.body_keys(ctx)), "head": S.clone(head)}
        return ClientUpdate(client={**client, "head": head}, message=message, metrics=metrics)

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Weighted average of the feature extractors; the uploaded classifiers replace the server's copies."""
        cids = sorted(messages)
        if not cids:
            return server
        avg = S.weighted_average([messages[c]["state"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        heads = {**server["heads"], **{c: messages[c]["head"] for c in cids}}
        return {**server, "model": S.update(server["model"], avg), "heads": heads}

    def ensemble_plan(self, ctx: Any, cid: int, server: dict[str, Any]) -> LocalPlan:
        """The universal model: one slot per classifier (client order) on the shared extractor, logits averaged."""
        heads = [server["heads"][j] for j in sorted(server["heads"])]
        models = {ensemble_slot(j): S.update(server["model"], h) for j, h in enumerate(heads)}
        return LocalPlan(cid, models, fuse=tuple(models), fuse_reduction="mean")

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The shared extractor with the client's own classifier (one member of the evaluated ensemble)."""
        return S.update(server["model"], client["head"])

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The ensemble of every client's classifier (mean of logits), the same for every client."""
        return self.ensemble_plan(ctx, cid, server)

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The module of :meth:`eval_plan`, the shared extractor run once."""
        return self.ensemble_module(ctx, self.eval_plan(ctx, cid, server, client))

    def ensemble_module(self, ctx: Any, plan: LocalPlan) -> nn.Module:
        """:class:`HeadEnsemble` of an ensemble plan's slots (scratch models named after them)."""
        members = [ctx.load(plan.models[s], s) for s in plan.fuse]
        return HeadEnsemble(members[0], [m.head for m in members])

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: Any, finetune: bool) -> nn.Module:
        """A held-out client predicts with the same ensemble (COPA's purpose: an unseen domain); COPA has no
        fine-tuning step, so ``finetune`` changes nothing."""
        return self.ensemble_module(ctx, self.ensemble_plan(ctx, data.cid, server))
