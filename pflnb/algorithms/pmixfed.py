"""pMixFed: layer-wise mixup of the global model and persistent local models (spec §2).

Per round t (1-based, T = ``horizon``) with sampled clients S_t and n blocks (i = 1 base … n head):

- **broadcast** (Eq. 8): client k computes μ_k from its local model's accuracy (percent, Eq. 6 or the
  linear rule) and sets L_k,i ← λ^B_i G_i + (1 − λ^B_i) L_k,i with λ^B_i = min(1, μ_k^c (n − i)) (Eq. 7),
  then trains *all* layers for the local epochs and uploads the whole model;
- **aggregation** (Eq. 9/15): the server computes μ_A from the previous global model's mean accuracy
  over the round's clients and sets G_i ← λ^A_i G_i + (1 − λ^A_i) Σ_k Ω_k L_k,i with
  λ^A_i = max(0, 1 − (i μ_A)^c), Ω_k ∝ |D_k| (Eq. 9's data-size weights).

The accuracy that drives μ is measured on each client's **validation** split by default
(``acc_split="val"``); the paper's test-driven μ (§5.4.2) is the switch ``acc_split="test"``, which leaks test data
into training decisions and is used by no reported number.

μ modes: ``sigmoid`` (Eq. 6 with the round fraction t/T and slope ``b``), ``simple`` (1 − acc/100),
``fixed`` (μ = ``mu0``: pMixFed-Dynamic), ``uniform`` (λ = ``mu0`` on every layer in both stages: the
paper's Fig. 5 "pFedMix"), ``beta`` (λ_i ~ Beta(α, α) i.i.d. per layer, client and round in both stages;
α = ``beta_alpha`` or the adaptive schedule of Eq. 31). BatchNorm affine parameters and running
statistics are mixed with their block's λ (spec §2.6 item 1). A fresh optimizer each round.

Unseen clients start from the final global model (the default ``unseen_module``), as in the paper.
``shock_round`` > 0 re-initialises the global model's ``shock_part`` right after that round's aggregation
(a forced accuracy collapse for the Fig. 4 experiment); :class:`FedSimShock` does the same for FedSim.
:class:`PMixFedHetero` runs pMixFed on clients of different depths (Table 3) with the ownership-renormalised
aggregation of spec §2.6 item 5 (:func:`owner_aggregate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from pflnb.algorithms.partial import FedSim, _check_spec, aggregation_weights, layer_split_keys
from pflnb.algorithms.registry import register, variant
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import LocalPlan, Phase, PlanResult
from pflnb.fl.sequential import plan_module
from pflnb.fl.training import evaluate, train_epochs

MU_MODES = ("sigmoid", "simple", "fixed", "uniform", "beta")
ACC_SPLITS = ("test", "val")
BETA_SCHEDULES = ("constant", "adaptive")


# ------------------------------------------------------------------------------------------ pure rules
def mu_sigmoid(acc: float | np.ndarray, t: float, horizon: float, b: float = 1.0) -> float | np.ndarray:
    """Eq. 6: μ = 1 − 1/(1 + exp(−b·(t/T)·(acc − 50))) = σ(b·(t/T)·(50 − acc)), acc in percent, t 1-based."""
    z = b * (t / horizon) * (np.asarray(acc, dtype=np.float64) - 50.0)
    out = 0.5 * (1.0 - np.tanh(0.5 * z))  # = 1 − σ(z), overflow-free
    return float(out) if np.ndim(out) == 0 else out


def mu_simple(acc: float | np.ndarray) -> float | np.ndarray:
    """§5.4.2 linear rule: μ = 1 − acc/100 (acc in percent), clipped to [0, 1]."""
    out = np.clip(1.0 - np.asarray(acc, dtype=np.float64) / 100.0, 0.0, 1.0)
    return float(out) if np.ndim(out) == 0 else out


def lambda_broadcast(mu: float, n: int, c: float = 1.0) -> np.ndarray:
    """Eq. 7 (broadcast): λ^B_i = min(1, μ^c (n − i)) for blocks i = 1..n (λ^B_n = 0: the head stays local)."""
    i = np.arange(1, n + 1, dtype=np.float64)
    return np.minimum(1.0, (mu**c) * (n - i))


def lambda_aggregate(mu: float, n: int, c: float = 1.0) -> np.ndarray:
    """Eq. 7 (aggregation): λ^A_i = max(0, 1 − (i μ)^c) for blocks i = 1..n (the base keeps most history)."""
    i = np.arange(1, n + 1, dtype=np.float64)
    return np.maximum(0.0, 1.0 - (i * mu) ** c)


def beta_alpha_schedule(t: int, horizon: int, schedule: str = "constant", alpha: float = 1.0) -> float:
    """Beta(α, α) concentration in round t (1-based): constant α, or Eq. 31's adaptive 0.1 / 100 / 0.1 by thirds."""
    if schedule == "constant":
        return float(alpha)
    if schedule == "adaptive":
        frac = (t - 1) / max(horizon, 1)
        return 100.0 if 1.0 / 3.0 <= frac < 2.0 / 3.0 else 0.1
    raise ValueError(f"beta_schedule must be one of {BETA_SCHEDULES}, got {schedule!r}")


def model_blocks(model: torch.nn.Module) -> list[tuple[str, list[str]]]:
    """The model's blocks (i = 1 base … n head): ``model.blocks()`` when defined, else ``model.layers()``."""
    return model.blocks() if hasattr(model, "blocks") else model.layers()


def per_key(blocks: list[tuple[str, list[str]]], lam: np.ndarray) -> dict[str, float]:
    """Per-block λ spread over each block's state keys (the ``lam`` mapping of :func:`pflnb.fl.state.mix`)."""
    return {k: float(lam[i]) for i, (_, keys) in enumerate(blocks) for k in keys}


def _fresh_state(ctx: Any, *key: int | str) -> S.State:
    gen = ctx.generator(*key)
    seed = int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ctx.model_fn()
    return S.to(S.clone(model.state_dict()), ctx.device)


def shock(ctx: Any, state: S.State, part: str) -> S.State:
    """``state`` with the entries of layer spec ``part`` replaced by a fresh random initialisation."""
    keys = layer_split_keys(ctx.layers, ctx.head_keys, part)
    return S.update(state, S.select(_fresh_state(ctx, "shock"), keys))


# ------------------------------------------------------------------------------------------ algorithm
@dataclass(frozen=True)
class PMixFedParams:
    """pMixFed hyperparameters (spec §2.2–2.6).

    - ``mu_mode``: one of ``MU_MODES``; ``mu0``: μ of ``fixed`` (and λ of ``uniform``);
    - ``b``: sigmoid slope multiplier (Fig. 5 sweeps it); ``horizon``: T of the round fraction t/T
      (set it to the number of rounds); ``c``: the undefined exponent of Eq. 7 (default 1);
    - ``acc_split``: the split whose accuracy drives μ (``val``, the default, keeps test data out of training;
      ``test`` is the paper's literal §5.4.2 rule, kept as a switch: it leaks the test split into the mixing);
    - ``beta_alpha`` / ``beta_schedule``: the Beta mix factor (§5.4.1, Eq. 31);
    - ``lam_b`` / ``lam_a``: the constant λ of ``uniform`` at broadcast / aggregation (None: ``mu0``);
      ``uniform`` with lam_b = 1, lam_a = 0 is FedAvg, with lam_b = 1, lam_a = λ FedAvg with server lr 1 − λ;
    - ``weights``: aggregation weights (``n_samples`` = Eq. 9's Ω_k, ``uniform`` = Algorithm 1's 1/K);
    - ``shock_round`` / ``shock_part``: forced collapse of the global model (Fig. 4 experiment; 0 = off).
    """

    mu_mode: str = "sigmoid"
    mu0: float = 0.5
    b: float = 1.0
    horizon: int = 100
    c: float = 1.0
    acc_split: str = "val"
    beta_alpha: float = 1.0
    beta_schedule: str = "constant"
    lam_b: float | None = None
    lam_a: float | None = None
    weights: str = "n_samples"
    shock_round: int = 0
    shock_part: str = "all"

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        if self.mu_mode not in MU_MODES:
            raise ValueError(f"mu_mode must be one of {MU_MODES}, got {self.mu_mode!r}")
        if not 0.0 <= self.mu0 <= 1.0:
            raise ValueError(f"mu0 must be in [0, 1], got {self.mu0}")
        if self.c <= 0 or self.b <= 0:
            raise ValueError(f"c and b must be > 0, got c={self.c}, b={self.b}")
        if self.horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {self.horizon}")
        for name in ("lam_b", "lam_a"):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be None or in [0, 1], got {v}")
        if self.acc_split not in ACC_SPLITS:
            raise ValueError(f"acc_split must be one of {ACC_SPLITS}, got {self.acc_split!r}")
        if self.beta_alpha <= 0:
            raise ValueError(f"beta_alpha must be > 0, got {self.beta_alpha}")
        if self.beta_schedule not in BETA_SCHEDULES:
            raise ValueError(f"beta_schedule must be one of {BETA_SCHEDULES}, got {self.beta_schedule!r}")
        if self.weights not in ("n_samples", "uniform"):
            raise ValueError(f"weights must be n_samples or uniform, got {self.weights!r}")
        if self.shock_round < 0:
            raise ValueError(f"shock_round must be >= 0, got {self.shock_round}")
        _check_spec(self.shock_part, "shock_part")


@register
class PMixFed(Algorithm):
    """pMixFed (adaptive μ, sigmoid of Eq. 6 by default): layer-wise mixup at broadcast and aggregation."""

    name = "pmixfed"
    Params: ClassVar[type] = PMixFedParams

    # ---- μ and λ ------------------------------------------------------------------------------------
    def mu(self, ctx: Any, acc_percent: float) -> float:
        """The mix factor μ for an accuracy (percent) in the current round."""
        p = self.params
        if p.mu_mode == "sigmoid":
            return float(mu_sigmoid(acc_percent, ctx.round, p.horizon, p.b))
        if p.mu_mode == "simple":
            return float(mu_simple(acc_percent))
        return float(p.mu0)  # fixed / uniform (λ does not depend on μ in beta / uniform)

    def _lambdas(self, ctx: Any, mu: float, stage: str, n: int, *key: int | str) -> np.ndarray:
        p = self.params
        if p.mu_mode == "uniform":
            lam = p.lam_b if stage == "broadcast" else p.lam_a
            return np.full(n, p.mu0 if lam is None else lam)
        if p.mu_mode == "beta":
            a = beta_alpha_schedule(ctx.round, p.horizon, p.beta_schedule, p.beta_alpha)
            gen = ctx.generator("beta", stage, *key)
            seed = int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device))
            return np.random.default_rng(seed).beta(a, a, size=n)
        return lambda_broadcast(mu, n, p.c) if stage == "broadcast" else lambda_aggregate(mu, n, p.c)

    def _load(self, ctx: Any, state: S.State, cid: int, name: str = "main") -> torch.nn.Module:
        return ctx.load(state, name)

    def _acc(self, ctx: Any, state: S.State, cid: int, name: str = "main") -> float:
        split = ctx.client(cid).split(self.params.acc_split)
        if len(split) == 0:
            raise ValueError(f"acc_split={self.params.acc_split!r}: client {cid} has an empty {self.params.acc_split} split")
        return 100.0 * evaluate(self._load(ctx, state, cid, name), split)["acc"]

    # ---- hooks --------------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server: the global model and the shared init; clients: empty (L_k = the init until first selected)."""
        return {"model": S.clone(init_state), "init": S.clone(init_state)}, [{} for _ in range(ctx.num_clients)]

    def local_model(self, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """Client k's persistent local model L_k (the common init before its first round)."""
        return client["model"] if "model" in client else server["init"]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Eq. 8: μ_k from L_k's accuracy, the global model mixed into L_k layer-wise as the start, all layers trained
        (stream ``train``)."""
        blocks = model_blocks(ctx.model)
        acc = self._acc(ctx, self.local_model(server, client), cid)
        mu = self.mu(ctx, acc)
        lam = self._lambdas(ctx, mu, "broadcast", len(blocks), cid)
        mixed = S.mix(server["model"], self.local_model(server, client), per_key(blocks, lam))
        return LocalPlan(cid, {"main": mixed}, (Phase(ctx.optim),), info={"acc": acc, "mu": mu, "lam": lam})

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Upload the trained model (and, in ``beta`` mode, this client's aggregation λ)."""
        new, r, info = result.models["main"], result.phases[0], plan.info
        message: dict[str, Any] = {"state": new}
        if self.params.mu_mode == "beta":
            message["lam_agg"] = self._lambdas(ctx, 0.0, "aggregate", len(model_blocks(ctx.model)), cid)
        metrics = {
            "loss": r.loss,
            "steps": r.steps,
            "acc_local": info["acc"],
            "mu": info["mu"],
            "lam_broadcast": info["lam"].tolist(),
        }
        return ClientUpdate(client={"model": new}, message=message, metrics=metrics)

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Eq. 9/15: G_i ← λ^A_i G_i + (1 − λ^A_i) Σ Ω_k L_k,i, μ_A from G's mean accuracy on the round's clients."""
        cids = sorted(messages)
        if not cids:
            return server
        blocks = model_blocks(ctx.model)
        g = server["model"]
        w = np.asarray(aggregation_weights(ctx, cids, self.params.weights), dtype=np.float64)
        w = w / w.sum()
        if self.params.mu_mode == "beta":  # per-client λ_{i,k}: G = Σ Ω_k (λ_ik G + (1 − λ_ik) L_k)
            mixed = [S.mix(g, messages[c]["state"], per_key(blocks, messages[c]["lam_agg"])) for c in cids]
            new = S.weighted_average(mixed, w.tolist())
            lam = np.sum([wk * np.asarray(messages[c]["lam_agg"]) for wk, c in zip(w, cids)], axis=0)
            acc_g, mu = float("nan"), float("nan")
        else:
            adaptive = self.params.mu_mode in ("sigmoid", "simple")
            acc_g = float(np.mean([self._acc(ctx, g, c, "server") for c in cids])) if adaptive else float("nan")
            mu = self.mu(ctx, acc_g)
            lam = self._lambdas(ctx, mu, "aggregate", len(blocks))
            avg = S.weighted_average([messages[c]["state"] for c in cids], w.tolist())
            new = S.mix(g, avg, per_key(blocks, lam))
        if self.params.shock_round and ctx.round == self.params.shock_round:
            new = shock(ctx, new, self.params.shock_part)
        return {**server, "model": new, "mu_agg": mu, "acc_global": acc_g, "lam_agg": np.asarray(lam).tolist()}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """Client k is evaluated with its persistent local model L_k."""
        return self.local_model(server, client)

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """μ_A, the global model's accuracy that set it, and the per-layer aggregation λ^A of this round."""
        return {k: server[k] for k in ("mu_agg", "acc_global", "lam_agg") if k in server}


PMixFedDynamic = variant(
    "pmixfed-dynamic",
    PMixFed,
    "pMixFed-Dynamic (§5.1): the Eq. 7 layer-wise λ with a constant μ = mu0 (no accuracy feedback).",
    mu_mode="fixed",
)


@dataclass(frozen=True)
class FedSimShockParams(FedSim.Params):
    """FedSim with a forced collapse: the global model's ``shock_part`` re-initialised after ``shock_round``."""

    shock_round: int = 0
    shock_part: str = "all"


@register
class FedSimShock(FedSim):
    """FedSim (Pillutla et al. 2022) plus the forced global-model collapse of the Fig. 4 experiment."""

    name = "fedsim-shock"
    Params = FedSimShockParams

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """FedSim's aggregation, then the shock in round ``shock_round``."""
        server = super().aggregate(ctx, server, messages)
        if self.params.shock_round and ctx.round == self.params.shock_round:
            server = {**server, "model": shock(ctx, server["model"], self.params.shock_part)}
        return server


# ------------------------------------------------------------------------------------------ heterogeneous depths
def owned_blocks(depth: int, n: int) -> list[int]:
    """0-based indices of the global blocks a depth-``depth`` client owns: blocks 1..depth−1 and the head
    (spec §2.6 item 5, equal-width blocks, the head aligned "from the end of the global model")."""
    if not 2 <= depth <= n:
        raise ValueError(f"client depth must be in [2, {n}] (the global model's blocks), got {depth}")
    return [*range(depth - 1), n - 1]


def owner_aggregate(
    g: S.State,
    uploads: list[S.State],
    weights: list[float],
    owners: list[list[int]],
    blocks: list[tuple[str, list[str]]],
    lam: np.ndarray,
) -> S.State:
    """Eq. 9/15 with ownership renormalisation (spec §2.6 item 5): for each block i,
    G_i ← λ_i G_i + (1 − λ_i) Σ_{k owns i} Ω_k L_k,i / Σ_{k owns i} Ω_k; a block no client owns is unchanged.
    ``uploads[k]`` needs only the entries of the blocks listed in ``owners[k]``."""
    out = dict(g)
    for i, (_, keys) in enumerate(blocks):
        idx = [j for j, own in enumerate(owners) if i in own]
        if not idx or not keys:
            continue
        avg = S.weighted_average([S.select(uploads[j], keys) for j in idx], [weights[j] for j in idx])
        out.update(S.mix(S.select(g, keys), avg, float(lam[i])))
    return out


@dataclass(frozen=True)
class PMixFedHeteroParams(PMixFedParams):
    """pMixFed with heterogeneous client depths (§5.4.3, Appendix E.1, Table 3): client k has depth
    ``depths[k mod len(depths)]`` (global blocks 1..M_k−1 plus the global head); other fields as pMixFed.
    ``mu_mode="uniform"`` with lam_b = 1, lam_a = 0 is FedAvg with the same ownership-renormalised averaging,
    with lam_b = 0, lam_a = 1 local training of each client's sub-model."""

    depths: tuple[int, ...] = (3, 5, 7, 9, 11, 13)

    def validate(self) -> None:
        """pMixFed's checks, plus depths >= 2 and no Beta mode (its per-client λ_i,k is not defined across depths)."""
        super().validate()
        if not self.depths or any(int(d) < 2 for d in self.depths):
            raise ValueError(f"depths must be a non-empty list of integers >= 2, got {self.depths!r}")
        if self.mu_mode == "beta":
            raise ValueError("mu_mode 'beta' is not supported with heterogeneous depths")
        if self.shock_round:
            raise ValueError("shock_round is not supported with heterogeneous depths")


@register
class PMixFedHetero(PMixFed):
    """pMixFed on clients of different depths M_k (Table 3): Eq. 7 at broadcast over each client's own M_k
    blocks, Eq. 7 at aggregation over the global model's n blocks, each block averaged over its owners only.
    Client depths need a model with an ``active_depth`` attribute (``pmixfed-depth-mlp15``); on any other
    model every client has the full depth (plain pMixFed with per-block averaging)."""

    name = "pmixfed-hetero"
    Params = PMixFedHeteroParams

    def depth_of(self, ctx: Any, cid: int) -> int:
        """Client ``cid``'s depth M_k = depths[cid mod len(depths)] (unseen clients likewise, by their id);
        the model's full depth when its depth cannot be cut."""
        if not hasattr(ctx.model, "active_depth"):
            return len(model_blocks(ctx.model))
        return int(self.params.depths[cid % len(self.params.depths)])

    def _load(self, ctx: Any, state: S.State, cid: int, name: str = "main") -> torch.nn.Module:
        model = ctx.load(state, name)
        if hasattr(model, "active_depth"):
            model.active_depth = self.depth_of(ctx, cid)
        return model

    def _owned_keys(self, ctx: Any, cid: int) -> tuple[list[int], list[str]]:
        blocks = model_blocks(ctx.model)
        own = owned_blocks(self.depth_of(ctx, cid), len(blocks))
        return own, [k for i in own for k in blocks[i][1]]

    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """pMixFed's init, after checking that every client depth fits the global model."""
        if hasattr(ctx.model, "active_depth"):
            n = len(model_blocks(ctx.model))
            for d in self.params.depths:
                owned_blocks(int(d), n)
        return super().init(ctx, init_state)

    def model_attrs(self, ctx: Any, cid: int) -> tuple[tuple[str, Any], ...]:
        """The client's model attributes: its depth M_k (none on a model whose depth cannot be cut)."""
        return (("active_depth", self.depth_of(ctx, cid)),) if hasattr(ctx.model, "active_depth") else ()

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Eq. 8 on the client's own blocks (λ^B over its M_k blocks, the head last); those blocks trained (stream
        ``train``) at the client's depth."""
        blocks = model_blocks(ctx.model)
        own, keys = self._owned_keys(ctx, cid)
        local = self.local_model(server, client)
        acc = self._acc(ctx, local, cid)
        mu = self.mu(ctx, acc)
        lam_own = self._lambdas(ctx, mu, "broadcast", len(own), cid)
        lam = np.ones(len(blocks))  # blocks the client does not own: the global entries (never used by it)
        lam[own] = lam_own
        mixed = S.mix(server["model"], local, per_key(blocks, lam))
        wanted = set(keys)
        phase = Phase(ctx.optim, trainable=tuple(n for n, _ in ctx.model.named_parameters() if n in wanted))
        info = {"acc": acc, "mu": mu, "lam": lam_own, "own": own, "keys": keys}
        return LocalPlan(cid, {"main": mixed}, (phase,), info=info, model_attrs=self.model_attrs(ctx, cid))

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """Upload the client's own blocks (and which they are); keep the whole trained model."""
        new, r, info = result.models["main"], result.phases[0], plan.info
        metrics = {"loss": r.loss, "steps": r.steps, "acc_local": info["acc"], "mu": info["mu"]}
        metrics.update(lam_broadcast=info["lam"].tolist(), depth=self.depth_of(ctx, cid))
        message = {"state": S.select(new, info["keys"]), "blocks": info["own"]}
        return ClientUpdate(client={"model": new}, message=message, metrics=metrics)

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Eq. 9/15 per block over the block's owners (renormalised Ω), unowned blocks unchanged; μ_A from the
        previous global model's mean accuracy, each client evaluating it at its own depth."""
        cids = sorted(messages)
        if not cids:
            return server
        blocks = model_blocks(ctx.model)
        g = server["model"]
        w = aggregation_weights(ctx, cids, self.params.weights)
        adaptive = self.params.mu_mode in ("sigmoid", "simple")
        acc_g = float(np.mean([self._acc(ctx, g, c, "server") for c in cids])) if adaptive else float("nan")
        mu = self.mu(ctx, acc_g)
        lam = self._lambdas(ctx, mu, "aggregate", len(blocks))
        uploads, owners = [messages[c]["state"] for c in cids], [messages[c]["blocks"] for c in cids]
        new = owner_aggregate(g, uploads, w, owners, blocks, lam)
        return {**server, "model": new, "mu_agg": mu, "acc_global": acc_g, "lam_agg": np.asarray(lam).tolist()}

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Client k's local model L_k at its depth M_k."""
        return LocalPlan(cid, {"main": self.eval_state(ctx, cid, server, client)}, model_attrs=self.model_attrs(ctx, cid))

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> torch.nn.Module:
        """The module of :meth:`eval_plan`."""
        return plan_module(ctx, self.eval_plan(ctx, cid, server, client))

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: Any, finetune: bool) -> torch.nn.Module:
        """The global model cut to the unseen client's depth, its blocks fine-tuned when ``finetune``."""
        model = self._load(ctx, server["model"], data.cid)
        if finetune:
            _, keys = self._owned_keys(ctx, data.cid)
            params = [p for name, p in model.named_parameters() if name in set(keys)]
            train_epochs(model, data.train, ctx.optim, ctx.generator("unseen", data.cid), ctx.finetune_epochs, params)
        return model


def effective_server_lr(lam_agg: np.ndarray) -> np.ndarray:
    """Per-block server learning rate that pMixFed's aggregation applies to the FedAvg pseudo-gradient: 1 − λ^A_i."""
    return 1.0 - np.asarray(lam_agg, dtype=np.float64)


__all__ = [
    "MU_MODES",
    "FedSimShock",
    "PMixFed",
    "PMixFedDynamic",
    "PMixFedHetero",
    "PMixFedParams",
    "beta_alpha_schedule",
    "effective_server_lr",
    "lambda_aggregate",
    "lambda_broadcast",
    "model_blocks",
    "owned_blocks",
    "owner_aggregate",
    "mu_simple",
    "mu_sigmoid",
    "per_key",
    "shock",
]
