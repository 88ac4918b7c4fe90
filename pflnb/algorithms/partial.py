"""The FedAvg family: one algorithm whose parameters say which entries stay on the client.

A model's state is split three ways:
- **personal** entries never leave the client (a layer split such as ``head`` or ``bottom:2``, plus every
  normalization entry when ``bn="local"``);
- **frozen** entries are never trained (FedBABU's random head);
- **shared** entries (the rest) are trained locally and averaged by the server.

Local training runs either simultaneously on personal and shared entries (``mode="sim"``: FedAvg, FedPer,
FedSim, LG-FedAvg) or alternating, personal first with the shared part fixed, then shared with the personal
part fixed (``mode="alt"``: FedRep, FedAlt). ``mu`` adds FedProx's proximal term on the shared entries;
``ft_epochs`` fine-tunes the model before evaluation (FedAvg-FT, FedBABU). Registered defaults give the
named methods below.

Held-out (unseen) clients start from the server model. Its personal entries are, with ``unseen_personal="init"``
(the default), the never-trained initial ones; with ``"average"`` the clients also upload their personal
entries and the server keeps their sample-weighted average over each round's clients, used only for the cold
start of unseen clients (pMixFed spec §2.7: averaged heads for FedAlt/FedSim, averaged local bodies for
LG-FedAvg). Training is identical under both rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torch import nn

from pflnb.algorithms.registry import variant
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import LocalPlan, Phase, PlanResult, Prox, Term
from pflnb.fl.sequential import run_phase
from pflnb.fl.training import train_epochs

WEIGHTS = ("n_samples", "uniform")
BN_RULES = ("shared", "local")
MODES = ("sim", "alt")
UNSEEN_RULES = ("init", "average")


def aggregation_weights(ctx: Any, cids: list[int], rule: str) -> list[float]:
    """Aggregation weights of the given clients: training-set sizes or uniform."""
    if rule == "uniform":
        return [1.0] * len(cids)
    if rule == "n_samples":
        return [float(ctx.n_train(c)) for c in cids]
    raise ValueError(f"weights must be one of {WEIGHTS}, got {rule!r}")


def layer_split_keys(layers: list[tuple[str, list[str]]], head_keys: list[str], spec: str) -> list[str]:
    """State keys selected by a layer spec: ``none``, ``all``, ``head``, ``body`` (all but the head),
    ``bottom:k`` (the first k layers) or ``top:k`` (the last k layers); layers as ``PFLModel.layers()``."""
    all_keys = [k for _, ks in layers for k in ks]
    if spec == "none":
        return []
    if spec == "all":
        return all_keys
    if spec == "head":
        return list(head_keys)
    if spec == "body":
        head = set(head_keys)
        return [k for k in all_keys if k not in head]
    kind, _, num = spec.partition(":")
    if kind in ("bottom", "top") and num.isdigit():
        k = int(num)
        if not 0 <= k <= len(layers):
            raise ValueError(f"layer spec {spec!r}: the model has {len(layers)} layers")
        chosen = layers[:k] if kind == "bottom" else layers[len(layers) - k :]
        return [key for _, ks in chosen for key in ks]
    raise ValueError(f"layer spec must be none, all, head, body, bottom:k or top:k; got {spec!r}")


def _check_spec(spec: str, name: str) -> None:
    kind, _, num = spec.partition(":")
    if spec in ("none", "all", "head", "body") or (kind in ("bottom", "top") and num.isdigit()):
        return
    raise ValueError(f"{name} must be none, all, head, body, bottom:k or top:k; got {spec!r}")


@dataclass(frozen=True)
class PartialParams:
    """Hyperparameters of the FedAvg family (see the module docstring)."""

    personal: str = "none"  # layer spec of client-only entries
    frozen: str = "none"  # layer spec of never-trained entries
    bn: str = "shared"  # "local": every normalization entry stays on the client (FedBN)
    mode: str = "sim"  # "sim" or "alt"
    personal_epochs: int = 1  # epochs on the personal part first (mode "alt")
    mu: float = 0.0  # FedProx proximal weight on the shared entries
    prox_squared: bool = True  # (mu/2)||w - w_g||^2; False: (mu/2)||w - w_g|| (Fed-CO2 code quirk)
    ft_epochs: int = 0  # fine-tuning epochs before evaluation
    ft_part: str = "all"  # layer spec fine-tuned before evaluation
    weights: str = "n_samples"  # aggregation weights
    global_lr: float = 1.0  # server learning rate on the averaged update
    unseen_personal: str = "init"  # unseen clients' personal entries: "init" or "average" (of the last round's clients)

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        _check_spec(self.personal, "personal")
        _check_spec(self.frozen, "frozen")
        _check_spec(self.ft_part, "ft_part")
        if self.bn not in BN_RULES:
            raise ValueError(f"bn must be one of {BN_RULES}, got {self.bn!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")
        if self.unseen_personal not in UNSEEN_RULES:
            raise ValueError(f"unseen_personal must be one of {UNSEEN_RULES}, got {self.unseen_personal!r}")
        if self.mu < 0:
            raise ValueError(f"mu must be >= 0, got {self.mu}")
        if self.personal_epochs < 0 or self.ft_epochs < 0:
            raise ValueError("personal_epochs and ft_epochs must be >= 0")


class PartialFedAvg(Algorithm):
    """FedAvg with personal, frozen and shared entries (base of the FedAvg family)."""

    Params: ClassVar[type] = PartialParams

    # ---- key bookkeeping ------------------------------------------------------------------------
    def personal_keys(self, ctx: Any) -> list[str]:
        """Entries that never leave the client."""
        keys = layer_split_keys(ctx.layers, ctx.head_keys, self.params.personal)
        if self.params.bn == "local":
            keys = keys + [k for k in ctx.bn_keys if k not in set(keys)]
        return keys

    def shared_keys(self, ctx: Any) -> list[str]:
        """Entries sent to and averaged by the server."""
        personal = set(self.personal_keys(ctx))
        return [k for k in ctx.model.state_dict() if k not in personal]

    def _param_names(self, ctx: Any, spec_keys: list[str]) -> set[str]:
        params = {n for n, _ in ctx.model.named_parameters()}
        return {k for k in spec_keys if k in params}

    def trainable(self, ctx: Any, model: nn.Module, keys: list[str]) -> list[nn.Parameter]:
        """Parameters of ``model`` among ``keys``, minus frozen ones."""
        frozen = set(layer_split_keys(ctx.layers, ctx.head_keys, self.params.frozen))
        wanted = set(keys) - frozen
        return [p for n, p in model.named_parameters() if n in wanted]

    # ---- hooks ----------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server holds the full model; each client its own copy of the personal entries."""
        personal = S.select(init_state, self.personal_keys(ctx))
        return {"model": S.clone(init_state)}, [{"personal": S.clone(personal)} for _ in range(ctx.num_clients)]

    def client_state(self, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The client's full model: server entries with its personal entries written over them."""
        return S.update(server["model"], client["personal"]) if client.get("personal") else server["model"]

    def trainable_names(self, ctx: Any, keys: list[str]) -> tuple[str, ...]:
        """Names of the parameters among ``keys``, minus frozen ones, in the model's parameter order."""
        frozen = set(layer_split_keys(ctx.layers, ctx.head_keys, self.params.frozen))
        wanted = set(keys) - frozen
        return tuple(n for n, _ in ctx.model.named_parameters() if n in wanted)

    def prox_term(self, ctx: Any) -> Prox | None:
        """FedProx's proximal term (mu/2)·‖w − w_g‖² on the shared parameters, or None when mu = 0."""
        if self.params.mu == 0:
            return None
        names = self._param_names(ctx, self.shared_keys(ctx))
        keys = tuple(n for n, _ in ctx.model.named_parameters() if n in names)
        return Prox(self.params.mu, keys, "global", self.params.prox_squared)

    def terms(self, ctx: Any) -> tuple[Term, ...]:
        """The open terms of the main local phase (FedProx's term when mu > 0)."""
        prox = self.prox_term(ctx)
        return () if prox is None else (prox,)

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Local SGD from the client's model: with ``mode="alt"`` first the personal part (stream
        ``train-personal``, metrics ``personal_*``), then the rest; else every non-frozen entry at once
        (stream ``train``, FedProx's term on the shared parameters)."""
        personal, shared = self.personal_keys(ctx), self.shared_keys(ctx)
        phases = []
        if self.params.mode == "alt" and personal and self.params.personal_epochs > 0:
            names = self.trainable_names(ctx, personal)
            phases.append(
                Phase(ctx.optim, stream="train-personal", trainable=names, epochs=self.params.personal_epochs, metric="personal_")
            )
            train_keys = shared
        else:
            train_keys = personal + shared
        names = self.trainable_names(ctx, train_keys)
        if names:
            phases.append(Phase(ctx.optim, stream="train", trainable=names, terms=self.terms(ctx)))
        return LocalPlan(cid, {"main": self.client_state(server, client)}, tuple(phases), anchors={"global": server["model"]})

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Send the shared entries, keep the personal ones."""
        new = result.models["main"]
        personal, shared = self.personal_keys(ctx), self.shared_keys(ctx)
        message = {"state": S.select(new, shared)} if shared else {}
        if self.params.unseen_personal == "average" and personal:
            message["personal"] = S.select(new, personal)  # used only for the cold start of unseen clients
        return ClientUpdate(client={"personal": S.select(new, personal)}, message=message, metrics=result.metrics(plan))

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Weighted average of the shared entries, applied with server learning rate η_g (and, with
        ``unseen_personal="average"``, the weighted average of the uploaded personal entries, kept apart)."""
        server = self.average_personal(ctx, server, messages)
        cids = [c for c in sorted(messages) if "state" in messages[c]]
        if not cids:
            return server
        avg = S.weighted_average([messages[c]["state"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        if self.params.global_lr != 1.0:
            current = S.select(server["model"], avg.keys())
            avg = S.add(current, S.sub(avg, current), self.params.global_lr)
        return {**server, "model": S.update(server["model"], avg)}

    def average_personal(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """``server`` with ``personal_avg``: the weighted average (``weights``) of the round's uploaded personal entries."""
        cids = [c for c in sorted(messages) if "personal" in messages[c]]
        if not cids:
            return server
        avg = S.weighted_average([messages[c]["personal"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        return {**server, "personal_avg": avg}

    def unseen_state(self, ctx: Any, server: dict[str, Any]) -> S.State:
        """A held-out client's starting model: the server model, with the averaged personal entries when
        ``unseen_personal="average"`` (spec §2.7 cold start), else with the server's (initial) personal entries."""
        if self.params.unseen_personal == "average" and server.get("personal_avg"):
            return S.update(server["model"], server["personal_avg"])
        return server["model"]

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The client's model (server entries with its personal entries)."""
        return self.client_state(server, client)

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """The client's model, with ``ft_epochs`` of fine-tuning of the ``ft_part`` entries (stream ``finetune``)."""
        phases: tuple[Phase, ...] = ()
        if self.params.ft_epochs > 0:
            keys = set(layer_split_keys(ctx.layers, ctx.head_keys, self.params.ft_part))
            names = tuple(n for n, _ in ctx.model.named_parameters() if n in keys)
            phases = (Phase(ctx.optim, stream="finetune", trainable=names, epochs=self.params.ft_epochs),)
        return LocalPlan(cid, {"main": self.eval_state(ctx, cid, server, client)}, phases)

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """The client's model, fine-tuned on its train split first when ``ft_epochs > 0`` (``eval_plan``)."""
        plan = self.eval_plan(ctx, cid, server, client)
        model = ctx.load(plan.models["main"])
        for phase in plan.phases:
            run_phase(ctx, plan, phase, model)
        return model

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: Any, finetune: bool) -> nn.Module:
        """The cold-start model of :meth:`unseen_state`, fine-tuned on the client's train split when asked."""
        model = ctx.load(self.unseen_state(ctx, server))
        if finetune:
            train_epochs(model, data.train, ctx.optim, ctx.generator("unseen", data.cid), epochs=ctx.finetune_epochs)
        return model


# ---- the registered members of the family: one row each (name, base, parameters, description) ------------------
FedAvg = variant("fedavg", PartialFedAvg, "FedAvg (McMahan et al. 2017): every entry averaged, BN included.", personalized=False)
FedBN = variant(
    "fedbn",
    PartialFedAvg,
    "FedBN (Li et al. 2021): normalization entries (affine and running statistics) stay local.",
    bn="local",
)
FedProx = variant(
    "fedprox",
    PartialFedAvg,
    "FedProx (Li et al. 2020): FedAvg plus (mu/2)·‖w − w_g‖² in local training.",
    personalized=False,
    mu=0.01,
)
FedAvgFT = variant(
    "fedavg-ft",
    PartialFedAvg,
    "FedAvg-FT: the global model fine-tuned for ft_epochs on each client before evaluation.",
    ft_epochs=1,
)
FedPer = variant(
    "fedper", PartialFedAvg, "FedPer (Arivazhagan et al. 2019): shared body, personal head, trained together.", personal="head"
)
FedRep = variant(
    "fedrep",
    PartialFedAvg,
    "FedRep (Collins et al. 2021): personal head trained first (personal_epochs), then the shared body.",
    personal="head",
    mode="alt",
    personal_epochs=5,
)
FedAlt = variant(
    "fedalt",
    PartialFedAvg,
    "FedAlt (Pillutla et al. 2022): alternating updates, personal part first, then the shared part.",
    personal="head",
    mode="alt",
)
FedSim = variant(
    "fedsim", PartialFedAvg, "FedSim (Pillutla et al. 2022): simultaneous updates of personal and shared parts.", personal="head"
)
LGFedAvg = variant(
    "lg-fedavg", PartialFedAvg, "LG-FedAvg (Liang et al. 2020): personal lower layers (the body), shared head.", personal="body"
)
FedBABU = variant(
    "fedbabu",
    PartialFedAvg,
    "FedBABU (Oh et al. 2022): head frozen at its random init during federation, fine-tuned before evaluation.",
    frozen="head",
    ft_epochs=1,
)
Local = variant("local", PartialFedAvg, "Local training only: every entry is personal, nothing is sent.", personal="all")
