"""Fed-CO2 (Cai et al., NeurIPS 2023): cooperation of an online (shared) and an offline (local) model.

Every client keeps two copies of the same network:

- the **online** model, FedBN-style: its non-personal entries are averaged by the server (Eq. 2), its
  normalization layers stay on the client (``bn="local"``: affine parameters and running statistics, the
  paper's rule; ``bn="affine"``: only the affine BN parameters, running statistics averaged, the
  label-skew code's rule for partial participation; spec §2.2);
- the **offline** model, trained on local data only and never aggregated.

A client predicts with the sum of the two models' logits (Eq. 3). Per round (Algorithm 1, spec §2.6):

1. *intra-client transfer* (mutual learning, Eqs. 4–5; skipped in round 1 as in the authors' code): one
   pass in which each model minimizes KL(frozen start-of-round copy of the other ‖ itself), T = 1;
2. *local adaptation with inter-client transfer* (Eqs. 6–7): ``local_epochs`` passes of cross-entropy
   plus μ·Σ_{j≠i} CE of the frozen offline heads of the other clients (from the end of the previous
   round) applied to the model's own features, for both models.

The online model sends its shared entries; under inter-client transfer the offline model also sends its
head (the classifier, ``head.*`` entries), and nothing else of the offline model ever leaves the client.
With both transfers off (Algorithm 2, ``fedco2-label``) the two models never interact: the online model
is exactly FedBN and the offline model exactly Local, since phase 2 draws its minibatches from the same
``ctx.generator("train", cid)`` as they do.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.algorithms.partial import PartialFedAvg, PartialParams, _check_spec, layer_split_keys
from pflnb.algorithms.registry import register, variant
from pflnb.fl import state as S
from pflnb.fl.algorithm import ClientUpdate
from pflnb.fl.engine import derive_seed
from pflnb.fl.plan import Batch, LocalPlan, Phase, PlanResult, Term
from pflnb.fl.sequential import plan_module
from pflnb.fl.training import evaluate

CO2_BN_RULES = ("local", "affine", "shared")
TRANSFER = ("none", "online", "offline", "both")
REDUCTIONS = ("sum", "mean")
OFFLINE_INIT = ("same", "independent")


def fused_logits(online: nn.Module, offline: nn.Module, x: torch.Tensor, reduction: str = "sum") -> torch.Tensor:
    """Fed-CO2's prediction F_on(x) + F_off(x) (Eq. 3; ``reduction="mean"``: ½(F_on + F_off), Eq. 10)."""
    z = online(x) + offline(x)
    if reduction == "sum":
        return z
    if reduction == "mean":
        return 0.5 * z
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


class FusedModel(nn.Module):
    """A module whose logits are Fed-CO2's fused prediction of an online and an offline model (Eq. 3)."""

    def __init__(self, online: nn.Module, offline: nn.Module) -> None:
        super().__init__()
        self.online = online
        self.offline = offline

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of the two models' raw logits."""
        return fused_logits(self.online, self.offline, x)


def mutual_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_teacher ‖ p_student), summed over classes and averaged over the batch, T = 1 (Eqs. 4–5)."""
    return F.kl_div(F.log_softmax(student_logits, 1), F.softmax(teacher_logits, 1), reduction="batchmean")


def generalization_loss(features: torch.Tensor, y: torch.Tensor, heads: list[nn.Module], reduction: str = "sum") -> torch.Tensor:
    """L_gen of Eq. 6: cross-entropy of each frozen foreign head on ``features``, summed (or averaged)."""
    if not heads:
        return features.new_zeros(())
    losses = torch.stack([F.cross_entropy(h(features), y) for h in heads])
    return losses.sum() if reduction == "sum" else losses.mean()


def co2_personal_keys(ctx: Any, personal: str, bn: str) -> list[str]:
    """The online model's client-only entries: the layer spec ``personal`` plus the normalization entries
    (``bn="local"``: all of them; ``"affine"``: weights and biases only; ``"shared"``: none)."""
    keys = layer_split_keys(ctx.layers, ctx.head_keys, personal)
    if bn == "local":
        extra = list(ctx.bn_keys)
    elif bn == "affine":
        params = {n for n, _ in ctx.model.named_parameters()}
        extra = [k for k in ctx.bn_keys if k in params]
    else:
        extra = []
    chosen = set(keys)
    return keys + [k for k in extra if k not in chosen]


@dataclass(frozen=True)
class FedBNAffineParams(PartialParams):
    """FedBN with only the BN affine parameters personal and the running statistics averaged."""

    bn: str = "affine"

    def validate(self) -> None:
        """Only bn="affine" is meaningful here; the other fields as in the FedAvg family."""
        if self.bn != "affine":
            raise ValueError(f"fedbn-affine keeps bn='affine', got {self.bn!r} (use fedbn or fedavg)")
        PartialParams.validate(dataclasses.replace(self, bn="local"))


@register
class FedBNAffine(PartialFedAvg):
    """FedBN as in Fed-CO2's label-skew code: BN affine parameters personal, BN running statistics averaged
    with the other entries (the online model of ``fedco2`` with ``bn="affine"``)."""

    name = "fedbn-affine"
    Params = FedBNAffineParams

    def personal_keys(self, ctx: Any) -> list[str]:
        """The layer-spec entries plus the BN affine parameters."""
        return co2_personal_keys(ctx, self.params.personal, "affine")


@dataclass(frozen=True)
class FedCO2Params(PartialParams):
    """Fed-CO2 hyperparameters.

    - ``bn``: online personalization of normalization layers: ``local`` (paper), ``affine`` (label-skew code),
      ``shared``; ``personal`` (layer spec) adds more personal layers to the online model (paper Fig. 7).
    - ``weights``: server weights (``uniform`` 1/N, the paper's Eq. 2; ``n_samples``, the label-skew code).
    - ``intra``: which model takes the mutual-learning KL step (Eq. 4 = online, Eq. 5 = offline).
    - ``inter``: which model adds L_gen of the foreign offline heads (Eqs. 6–7), weight ``gen_weight`` (μ),
      ``gen_reduction`` sum (paper and code) or mean over the N − 1 heads.
    - ``intra_epochs``: passes of mutual learning; ``skip_intra_first_round`` as in the code.
    - ``offline_init``: offline models start from the shared init (paper, feature-skew code) or independently.
    """

    bn: str = "local"
    weights: str = "uniform"
    intra: str = "both"
    inter: str = "both"
    gen_weight: float = 1.0
    gen_reduction: str = "sum"
    intra_epochs: int = 1
    skip_intra_first_round: bool = True
    offline_init: str = "same"

    def validate(self) -> None:
        """Reject values outside the allowed sets and FedAvg-family options Fed-CO2 does not use."""
        checks = [
            ("bn", self.bn, CO2_BN_RULES),
            ("intra", self.intra, TRANSFER),
            ("inter", self.inter, TRANSFER),
            ("gen_reduction", self.gen_reduction, REDUCTIONS),
            ("offline_init", self.offline_init, OFFLINE_INIT),
            ("weights", self.weights, ("uniform", "n_samples")),
            ("mode", self.mode, ("sim",)),
            ("frozen", self.frozen, ("none",)),
        ]
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        _check_spec(self.personal, "personal")
        if self.gen_weight < 0:
            raise ValueError(f"gen_weight must be >= 0, got {self.gen_weight}")
        if self.intra_epochs < 0:
            raise ValueError(f"intra_epochs must be >= 0, got {self.intra_epochs}")
        if self.mu != 0 or self.ft_epochs != 0 or self.global_lr != 1.0:
            raise ValueError("fedco2 does not use mu, ft_epochs or global_lr (leave them at 0, 0, 1.0)")


@dataclass(frozen=True)
class Distill(Term):
    """Eqs. 4–5 as a phase's whole loss (``ce=False``): KL(frozen ``teacher`` anchor ‖ model), T = 1, summed over
    classes and averaged over the batch."""

    teacher: str

    def anchors(self) -> tuple[str, ...]:
        return (self.teacher,)

    def loss(self, b: Batch) -> torch.Tensor:
        """KL(p_teacher ‖ p_model) per sample, batch mean (as :func:`mutual_kl`)."""
        z_t = b.forward(self.teacher, False)[1]
        return b.batchmean(F.kl_div(F.log_softmax(b.logits, 1), F.softmax(z_t, 1), reduction="none"))


@dataclass(frozen=True)
class ForeignHeads(Term):
    """Eqs. 6–7: ``weight``·L_gen, the cross-entropy of ``n`` frozen foreign offline heads (anchor ``anchor``,
    entries ``i/<head entry>``) on the model's features, summed or averaged (``reduction``); L_gen kept as ``gen``."""

    n: int
    weight: float
    reduction: str = "sum"
    anchor: str = "heads"
    needs_features = True
    before_head = True

    def anchors(self) -> tuple[str, ...]:
        return (self.anchor,)

    def loss(self, b: Batch) -> torch.Tensor:
        """``weight``·L_gen (as :func:`generalization_loss`)."""
        h = b.features
        if not self.n:
            gen = h.new_zeros(())
        else:
            a = b.anchor(self.anchor)
            heads = [{k.split("/", 1)[1]: v for k, v in a.items() if k.startswith(f"{i}/")} for i in range(self.n)]
            losses = torch.stack([b.cross_entropy(b.head(hs, h), b.y) for hs in heads])
            gen = losses.sum() if self.reduction == "sum" else losses.mean()
        b.keep("gen", gen)
        return self.weight * gen


def _uses(rule: str, which: str) -> bool:
    return rule == "both" or rule == which


@register
class FedCO2(PartialFedAvg):
    """Fed-CO2 with feature skew (Algorithm 1): online FedBN model + offline local model, intra- and
    inter-client knowledge transfer, prediction = sum of logits."""

    name = "fedco2"
    Params: ClassVar[type] = FedCO2Params

    # ---- keys -------------------------------------------------------------------------------------
    def personal_keys(self, ctx: Any) -> list[str]:
        """The online model's client-only entries."""
        return co2_personal_keys(ctx, self.params.personal, self.params.bn)

    @staticmethod
    def offline_head_keys(ctx: Any) -> list[str]:
        """The offline classifier's entries (what inter-client transfer ships)."""
        return list(ctx.head_keys)

    # ---- hooks ------------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """FedBN's server/client state plus one offline model per client (shared or independent init) and
        the server's copy of every offline head (round 1: the initial heads)."""
        server, clients = super().init(ctx, init_state)
        for cid, c in enumerate(clients):
            if self.params.offline_init == "same":
                c["offline"] = S.clone(init_state)
            else:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(derive_seed(ctx.seed, "offline-init", cid))
                    c["offline"] = S.to(S.clone(ctx.model_fn().state_dict()), ctx.device)
        heads = self.offline_head_keys(ctx)
        server["heads"] = {cid: S.select(S.clone(c["offline"]), heads) for cid, c in enumerate(clients)}
        return server, clients

    def _foreign_heads(self, ctx: Any, cid: int, server: dict[str, Any]) -> list[nn.Module]:
        template = ctx.scratch("foreign-head").head
        prefix = "head."
        heads = []
        for j in sorted(server["heads"]):
            if j == cid:
                continue
            h = copy.deepcopy(template)
            h.load_state_dict({k[len(prefix) :]: v for k, v in server["heads"][j].items()})
            h.eval().requires_grad_(False)
            heads.append(h)
        return heads

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Mutual learning (from round 2; stream ``train-intra``, each model distilling from the frozen start-of-round
        copy of the other), then local adaptation with the foreign offline heads (stream ``train``); each model keeps
        one optimizer over both passes (``opt_state``). Slots: ``main`` (online), ``offline``."""
        p = self.params
        online, offline = self.client_state(server, client), client["offline"]
        anchors: dict[str, S.State] = {}
        phases = []
        do_intra = {w: _uses(p.intra, w) for w in ("online", "offline")}
        intra = any(do_intra.values()) and p.intra_epochs > 0 and not (p.skip_intra_first_round and ctx.round <= 1)
        if intra:
            anchors.update({"teacher-online": online, "teacher-offline": offline})
            for which, slot, teacher in (("online", "main", "teacher-offline"), ("offline", "offline", "teacher-online")):
                if do_intra[which]:
                    term = Distill(teacher)
                    phases.append(
                        Phase(ctx.optim, slot, "train-intra", epochs=p.intra_epochs, terms=(term,), ce=False, opt_state=which)
                    )
        do_inter = {w: _uses(p.inter, w) and p.gen_weight > 0 for w in ("online", "offline")}
        n_heads = 0
        if any(do_inter.values()):
            heads = [server["heads"][j] for j in sorted(server["heads"]) if j != cid]
            n_heads = len(heads)
            anchors["heads"] = {f"{i}/{k[len('head.') :]}": v for i, h in enumerate(heads) for k, v in h.items()}
        for which, slot in (("online", "main"), ("offline", "offline")):
            terms = (ForeignHeads(n_heads, p.gen_weight, p.gen_reduction),) if do_inter[which] else ()
            phases.append(Phase(ctx.optim, slot, "train", terms=terms, opt_state=which))
        info = {"intra": intra, "do_intra": do_intra, "inter": any(do_inter.values())}
        return LocalPlan(cid, {"main": online, "offline": offline}, tuple(phases), anchors, info)

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """The online model sends its shared entries (and, under inter-client transfer, the offline head); metrics:
        the KL of each model's intra pass, each model's loss and L_gen."""
        p, info = self.params, plan.info
        res = dict(zip(((ph.model, ph.stream) for ph in plan.phases), result.phases))
        metrics: dict[str, float] = {}
        if info["intra"]:
            kl, steps = {"online": 0.0, "offline": 0.0}, 0
            for which, slot in (("online", "main"), ("offline", "offline")):
                if info["do_intra"][which]:
                    r = res[(slot, "train-intra")]
                    kl[which], steps = r.loss, r.steps
            metrics.update(kl_online=kl["online"], kl_offline=kl["offline"], intra_steps=steps)
        on, off = res[("main", "train")], res[("offline", "train")]
        metrics.update(loss=on.loss, loss_offline=off.loss, steps=on.steps)
        if info["inter"]:
            n = max(on.steps, 1)
            for which, r in (("online", on), ("offline", off)):
                gen = r.recorded("gen")
                metrics[f"gen_{which}"] = (sum(gen.double().tolist()) if gen is not None else 0.0) / n

        new_on, new_off = result.models["main"], result.models["offline"]
        shared = self.shared_keys(ctx)
        message: dict[str, Any] = {"state": S.select(new_on, shared)} if shared else {}
        if p.inter != "none":
            message["head"] = S.select(S.clone(new_off), self.offline_head_keys(ctx))
        client_out = {"personal": S.select(new_on, self.personal_keys(ctx)), "offline": new_off}
        return ClientUpdate(client=client_out, message=message, metrics=metrics)

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Eq. 2 on the online models' shared entries; store the offline heads that were sent."""
        states = {c: {"state": m["state"]} for c, m in messages.items() if "state" in m}
        new = super().aggregate(ctx, server, states) if states else dict(server)
        heads = dict(server["heads"])
        heads.update({c: m["head"] for c, m in messages.items() if "head" in m})
        return {**new, "heads": heads}

    # ---- evaluation -------------------------------------------------------------------------------
    def online_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """Client ``cid``'s online model (scratch ``main``)."""
        return ctx.load(self.client_state(server, client), "main")

    def offline_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """Client ``cid``'s offline model (scratch ``offline``)."""
        return ctx.load(client["offline"], "offline")

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The fused model: sum of the online (slot ``main``) and offline logits (Eq. 3), both in eval mode."""
        models = {"main": self.client_state(server, client), "offline": client["offline"]}
        return LocalPlan(cid, models, fuse=("main", "offline"))

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The module of :meth:`eval_plan`."""
        return plan_module(ctx, self.eval_plan(ctx, cid, server, client))

    def extra_metrics(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """Per-client validation/test accuracy of the online and of the offline model alone."""
        out: dict[str, list[float]] = {f"{w}_{s}_acc": [] for w in ("online", "offline") for s in ("val", "test")}
        for cid in range(ctx.num_clients):
            data = ctx.client(cid)
            for which, fn in (("online", self.online_module), ("offline", self.offline_module)):
                module = fn(ctx, cid, server, clients[cid])
                for split in ("val", "test"):
                    out[f"{which}_{split}_acc"].append(evaluate(module, data.split(split))["acc"])
        return out


FedCO2Label = variant(
    "fedco2-label",
    FedCO2,
    "Fed-CO2-Label (Algorithm 2): Fed-CO2 for label skew only: online FedBN model and offline local model trained "
    "independently on the same minibatches, no knowledge transfer, sample-size weights; prediction = sum of logits.",
    intra="none",
    inter="none",
    weights="n_samples",
)
