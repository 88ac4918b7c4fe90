"""FedAvg (McMahan et al. 2017), Local (no communication) and FedBN (Li et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.training import train_epochs

WEIGHTS = ("n_samples", "uniform")


def aggregation_weights(ctx: Any, cids: list[int], rule: str) -> list[float]:
    """Aggregation weights of the given clients: training-set sizes or uniform."""
    if rule == "uniform":
        return [1.0] * len(cids)
    if rule == "n_samples":
        return [float(ctx.n_train(c)) for c in cids]
    raise ValueError(f"weights must be one of {WEIGHTS}, got {rule!r}")


@dataclass(frozen=True)
class FedAvgParams:
    """FedAvg: ``weights`` = n_samples | uniform; ``bn`` = global (BN averaged like any layer)."""

    weights: str = "n_samples"
    global_lr: float = 1.0

    def validate(self) -> None:
        """Reject unknown weighting rules."""
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")


@register
class FedAvg(Algorithm):
    """FedAvg: clients train the global model; the server averages their states (server lr η_g)."""

    name = "fedavg"
    Params = FedAvgParams
    personalized = False

    def local_start(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The state a client starts local training from (FedAvg: the global model)."""
        return server["model"]

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """E local epochs of SGD from the global model; send the whole state and the sample count."""
        model = ctx.load(self.local_start(ctx, cid, server, client))
        metrics = train_epochs(model, ctx.client(cid).train, ctx.optim, ctx.generator("train", cid))
        new = ctx.state_of(model)
        return ClientUpdate(client=self.keep_local(new, client), message={"state": self.shared_part(ctx, new)}, metrics=metrics)

    def shared_part(self, ctx: Any, state: S.State) -> S.State:
        """The part of a client's state that is sent to the server (FedAvg: all of it)."""
        return state

    def keep_local(self, state: S.State, client: dict[str, Any]) -> dict[str, Any]:
        """What the client keeps after local training (FedAvg: nothing)."""
        return client

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Weighted average of the sent entries, applied with server learning rate η_g."""
        cids = sorted(messages)
        avg = S.weighted_average([messages[c]["state"] for c in cids], aggregation_weights(ctx, cids, self.params.weights))
        current = S.select(server["model"], avg.keys())
        new_part = avg if self.params.global_lr == 1.0 else S.add(current, S.sub(avg, current), self.params.global_lr)
        return {**server, "model": S.update(server["model"], new_part)}


@register
class Local(Algorithm):
    """Local training only: every client trains its own model from the common init, nothing is sent."""

    name = "local"

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Every client starts from the same initial model; the server only keeps that init (for
        held-out clients, which train from it)."""
        return {"model": S.clone(init_state)}, [{"model": S.clone(init_state)} for _ in range(ctx.num_clients)]

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """E local epochs on the client's own model; the message is empty."""
        model = ctx.load(client["model"])
        metrics = train_epochs(model, ctx.client(cid).train, ctx.optim, ctx.generator("train", cid))
        return ClientUpdate(client={"model": ctx.state_of(model)}, message={}, metrics=metrics)


@dataclass(frozen=True)
class FedBNParams(FedAvgParams):
    """FedBN: FedAvg with every normalization-layer entry (affine and running statistics) kept local."""


@register
class FedBN(FedAvg):
    """FedBN: normalization layers stay on the clients; everything else is averaged."""

    name = "fedbn"
    Params = FedBNParams
    personalized = True

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server model plus each client's own copy of the BN entries."""
        bn = S.select(init_state, ctx.bn_keys)
        return {"model": S.clone(init_state)}, [{"bn": S.clone(bn)} for _ in range(ctx.num_clients)]

    def local_start(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """Global non-BN entries with the client's own BN entries."""
        return S.update(server["model"], client["bn"])

    def shared_part(self, ctx: Any, state: S.State) -> S.State:
        """Everything but the BN entries."""
        bn = set(ctx.bn_keys)
        return S.filter_keys(state, lambda k: k not in bn)

    def keep_local(self, state: S.State, client: dict[str, Any]) -> dict[str, Any]:
        """The client keeps its trained BN entries."""
        return {"bn": S.select(state, client["bn"].keys())}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """Global non-BN entries with the client's BN entries."""
        return S.update(server["model"], client["bn"])
