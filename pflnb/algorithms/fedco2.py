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
from pflnb.fl.training import cross_entropy_loss, evaluate, make_optimizer, train_epochs

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


def _uses(rule: str, which: str) -> bool:
    return rule == "both" or rule == which


def _distill_loss(teacher: nn.Module):
    """The loss of Eqs. 4-5: KL(frozen teacher ‖ model) on the minibatch (a loss over a model pair)."""

    def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            z_t = teacher(x)
        return mutual_kl(model(x), z_t)

    return loss_fn


def _inter_loss(heads: list[nn.Module], weight: float, reduction: str, gen_terms: list[torch.Tensor]):
    """The loss of Eq. 7: CE of the model's head plus ``weight``·L_gen of the frozen foreign heads on its features
    (each minibatch's L_gen is appended, detached, to ``gen_terms``)."""

    def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = model.features(x)
        gen_loss = generalization_loss(h, y, heads, reduction)
        gen_terms.append(gen_loss.detach())
        return F.cross_entropy(model.head(h), y) + weight * gen_loss

    return loss_fn


def _sum(values: list[torch.Tensor]) -> float:
    """Σ of detached scalars, added in order in float64 after one read from the device."""
    return sum(torch.stack(values).double().tolist()) if values else 0.0


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

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """Mutual learning (from round 2), then local adaptation with the foreign offline heads."""
        p = self.params
        data = ctx.client(cid).train
        online = ctx.load(self.client_state(server, client), "main")
        offline = ctx.load(client["offline"], "offline")
        opt_on = make_optimizer(online.parameters(), ctx.optim)
        opt_off = make_optimizer(offline.parameters(), ctx.optim)
        metrics: dict[str, float] = {}
        do_intra = {w: _uses(p.intra, w) for w in ("online", "offline")}
        if any(do_intra.values()) and p.intra_epochs > 0 and not (p.skip_intra_first_round and ctx.round <= 1):
            # Each model distils from the frozen start-of-round copy of the other (Eqs. 4-5); the two updates are
            # independent, so each is one call of the training path on the same minibatches (stream train-intra).
            t_on = ctx.load(ctx.state_of(online), "teacher-online").eval()
            t_off = ctx.load(ctx.state_of(offline), "teacher-offline").eval()
            kl = {"online": 0.0, "offline": 0.0}
            steps = 0
            for which, model, opt, teacher in (("online", online, opt_on, t_off), ("offline", offline, opt_off, t_on)):
                if do_intra[which]:
                    m = train_epochs(
                        model,
                        data,
                        ctx.optim,
                        ctx.generator("train-intra", cid),
                        p.intra_epochs,
                        loss_fn=_distill_loss(teacher),
                        optimizer=opt,
                    )
                    kl[which], steps = m["loss"], m["steps"]
            metrics.update(kl_online=kl["online"], kl_offline=kl["offline"], intra_steps=steps)

        do_inter = {w: _uses(p.inter, w) and p.gen_weight > 0 for w in ("online", "offline")}
        heads = self._foreign_heads(ctx, cid, server) if any(do_inter.values()) else []
        # local adaptation (Eqs. 6-7): the two models again train independently on the same minibatches as FedBN
        # and Local (stream train), each with its own optimizer carried over from the intra-client phase
        gen_sums: dict[str, list[torch.Tensor]] = {"online": [], "offline": []}
        out: dict[str, dict[str, float]] = {}
        for which, model, opt in (("online", online, opt_on), ("offline", offline, opt_off)):
            loss_fn = (
                _inter_loss(heads, p.gen_weight, p.gen_reduction, gen_sums[which]) if do_inter[which] else cross_entropy_loss
            )
            out[which] = train_epochs(model, data, ctx.optim, ctx.generator("train", cid), loss_fn=loss_fn, optimizer=opt)
        steps = out["online"]["steps"]
        metrics.update(loss=out["online"]["loss"], loss_offline=out["offline"]["loss"], steps=steps)
        if any(do_inter.values()):
            n = max(steps, 1)
            metrics.update(**{f"gen_{w}": _sum(gen_sums[w]) / n for w in ("online", "offline")})

        new_on, new_off = ctx.state_of(online), ctx.state_of(offline)
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

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The fused model: sum of the online and offline logits (Eq. 3), both in eval mode."""
        return FusedModel(self.online_module(ctx, cid, server, client), self.offline_module(ctx, cid, server, client))

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
