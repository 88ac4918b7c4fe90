"""FedPG and S-FedPG: a common descent direction for the global model, direction drift for P-models.

Per round (spec fedpg.md §2.11, Alg. 1 of the paper):
  1. every online client uploads its loss L_i and full local-training-set gradient g_i at ω^t (no local epochs);
  2. the server drops zero gradients, rescales the rest to their mean norm μ, adds the stale gradients of
     absent clients seen within the last τ = ⌈M/|S^t|⌉ rounds and the fair-objective gradient ∇F̂, and solves
     the min-norm QP (5) exactly (Wolfe); d = σ d_min with σ = ‖d_r‖/‖d_min‖ (Eq. 6 gives g_i·d < 0 ∀ online i);
  3. S-FedPG picks the step by Armijo backtracking on every online loss and on F (Eq. 9);
  4. each online client i gets γ_i (closed form of Eq. 8, or max(γ_i, γ_user)) and builds its P-model
     ω_i = ω^t + η d_i, d_i = d + γ_i(−ĝ_i − d); the G-model moves to ω^{t+1} = ω^t + η d.

P-models follow protocol P1: a client keeps the P-model of the last round it was online; one never online is
evaluated with the G-model. The whole Gram matrix of stored gradients is kept (and updated incrementally),
so the QP, σ, the γ_i and the line search work in Gram space; d itself is one combination of stored vectors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from pflnb.algorithms.registry import register, variant
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.plan import LocalPlan, Phase, PlanResult
from pflnb.fl.sequential import full_gradient
from pflnb.theory.mgda import DIRECTIONS, FAIR_FROM, drift_gammas, fair_objective, fedpg_direction, personalization_gammas

FALLBACKS = ("mdfg", "lower_bound", "skip")
ARMIJO = ("paper", "clients")
LOWER_BOUNDS = ("divide", "paper")


@dataclass(frozen=True)
class FedPGParams:
    """FedPG hyperparameters (defaults: the spec's recommended readings).

    - ``gamma``: user drift γ (None: automatic γ_i); combined with the automatic value by ``gamma_rule``
      (``max``: max(γ_i, γ), the reading of "clients can set a larger γ"; ``override``: γ).
    - ablations: ``direction='fedsgd'`` (M1, d = d_r), ``fair=False`` (M2), ``personalize=False`` (M3, γ_i = 0),
      ``stale=False`` (M4, no stale gradients of absent clients).
    - ``fair_from``: ∇F from raw or normalised gradients (A1); ``drift_grad``: the drift, and the γ_i computed for
      it, uses ĝ_i or raw g_i (A5);
      ``fair_angle_deg``: FedMDFG's optional fairness gate (None: F always included).
    - ``grad_batch``: minibatch size of the gradient accumulation (B = 50); ``zero_grad``: ε_0 of dropped clients.
    - S-FedPG: ``line_search``, ``s`` (start at 2^s η), ``beta`` (Armijo constant), ``armijo`` (``paper``: clients
      and F; ``clients``: clients only), ``lower_bound`` (``divide``: 2^−s η/σ, A9; ``paper``: 2^−s ησ),
      ``fallback`` when Armijo never holds (``mdfg``: largest tried η lowering Σ L_i, else the one with smallest
      Σ L_i; ``lower_bound``: the last tried η; ``skip``: no step).
    - ``track_losses``: evaluate online losses after the step (fraction of clients whose loss rose);
      ``track_absent``: also the true losses of the absent-recent clients (spec §3 item 11; costs forward passes).
    """

    gamma: float | None = None
    gamma_rule: str = "max"
    direction: str = "mgda"
    fair: bool = True
    personalize: bool = True
    stale: bool = True
    fair_from: str = "raw"
    drift_grad: str = "normalized"
    fair_angle_deg: float | None = None
    grad_batch: int = 50
    zero_grad: float = 1e-6
    line_search: bool = False
    s: int = 5
    beta: float = 1e-4
    armijo: str = "paper"
    lower_bound: str = "divide"
    fallback: str = "mdfg"
    track_losses: bool = True
    track_absent: bool = False

    def validate(self) -> None:
        """Reject values outside the allowed sets."""
        if self.gamma is not None and not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be None or in [0, 1], got {self.gamma}")
        choices = {
            "gamma_rule": ("max", "override"),
            "direction": DIRECTIONS,
            "fair_from": FAIR_FROM,
            "drift_grad": ("normalized", "raw"),
            "armijo": ARMIJO,
            "lower_bound": LOWER_BOUNDS,
            "fallback": FALLBACKS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.grad_batch < 1:
            raise ValueError(f"grad_batch must be >= 1, got {self.grad_batch}")
        if self.s < 0 or self.beta < 0:
            raise ValueError(f"s and beta must be >= 0, got s={self.s}, beta={self.beta}")


def param_names(ctx: Any) -> list[str]:
    """Names of the model's trainable parameters (the entries FedPG moves)."""
    return [n for n, _ in ctx.model.named_parameters()]


def loss_and_gradient(model: torch.nn.Module, split: Any, batch_size: int) -> tuple[float, torch.Tensor]:
    """L_i(ω) and ∇L_i(ω) over the whole split: sample-weighted mean of minibatch losses and gradients (no update)."""
    return full_gradient(model, split, batch_size)


@torch.no_grad()
def mean_loss(model: torch.nn.Module, split: Any, batch_size: int = 1024) -> float:
    """Mean cross-entropy of ``model`` over ``split`` (train mode off)."""
    model.eval()
    n, total = len(split), 0.0
    for start in range(0, n, batch_size):
        x, y = split.x[start : start + batch_size], split.y[start : start + batch_size]
        total += float(F.cross_entropy(model(x), y, reduction="sum"))
    return total / max(n, 1)


@register
class FedPG(Algorithm):
    """FedPG: G-model along FedPG's common descent direction, P-models by direction drift (see module doc)."""

    name = "fedpg"
    Params = FedPGParams
    personalized = True

    # ---- helpers ------------------------------------------------------------------------------------
    def _flat(self, ctx: Any, state: S.State) -> torch.Tensor:
        return S.flatten(state, param_names(ctx)).double()

    def _with_flat(self, ctx: Any, base: S.State, vec: torch.Tensor) -> S.State:
        names = param_names(ctx)
        return S.update(base, S.unflatten(vec, S.select(base, names), names))

    def _losses(self, ctx: Any, state: S.State, cids: list[int]) -> np.ndarray:
        model = ctx.load(state, "fedpg-eval")
        return np.array([mean_loss(model, ctx.client(c).train) for c in cids])

    # ---- hooks --------------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The G-model, empty gradient history, the Gram matrix of stored gradients; clients without P-models."""
        m = ctx.num_clients
        server = {
            "model": S.clone(init_state),
            "bank": None,  # row i: client i's last uploaded gradient (float64)
            "last_round": {},
            "seen": [],
            "gram": np.zeros((m, m)),
            "round_info": {},
        }
        return server, [{} for _ in range(m)]

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan:
        """Upload L_i(ω^t) and the full local-training-set gradient g_i(ω^t): a gradient phase over batches of
        ``grad_batch`` in order (no update)."""
        phase = Phase(ctx.optim, kind="gradient", batch_size=self.params.grad_batch)
        return LocalPlan(cid, {"main": server["model"]}, (phase,))

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """The message: the loss and the gradient."""
        loss, grad = result.phases[0].loss, result.phases[0].grad
        return ClientUpdate(
            client=client, message={"loss": loss, "grad": grad}, metrics={"loss": loss, "grad_norm": float(grad.norm())}
        )

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Common descent direction (QP over online, stale and fair columns), step (line search for S-FedPG), γ_i."""
        p, t = self.params, ctx.round
        eta_base = float(ctx.optim.lr)
        cids = sorted(messages)
        online = [c for c in cids if float(messages[c]["grad"].norm()) > p.zero_grad]
        dropped = [c for c in cids if c not in online]
        last_round = dict(server["last_round"])
        seen = sorted(set(server["seen"]) | set(cids))
        gram = server["gram"].copy()
        model = server["model"]
        info: dict[str, Any] = {"dropped": dropped, "online": online, "eta": 0.0, "gamma": {}, "scale": {}}
        if not online:
            return {**server, "seen": seen, "round_info": info, "internals": {"n_online": 0}}
        # store the new gradients (one row per client) and update their Gram matrix incrementally
        bank = server.get("bank")
        if bank is None:
            g0 = messages[online[0]]["grad"]
            bank = torch.zeros(ctx.num_clients, g0.numel(), dtype=torch.float64, device=g0.device)
        for c in online:
            bank[c] = messages[c]["grad"].double()
            last_round[c] = t
        stored = sorted(last_round)
        block = (bank[online] @ bank.T).cpu().numpy()
        gram[online, :] = block
        gram[:, online] = block.T
        tau = math.ceil(len(seen) / len(online))
        absent = [j for j in stored if j not in messages and last_round[j] >= t - tau] if p.stale else []
        basis = online + absent
        G = gram[np.ix_(basis, basis)]
        L = np.array([messages[c]["loss"] for c in online])
        D = fedpg_direction(G, len(online), L, p.fair, p.fair_from, p.direction, p.fair_angle_deg)
        full = torch.zeros(ctx.num_clients, dtype=torch.float64, device=bank.device)
        full[basis] = torch.as_tensor(D.coef, dtype=torch.float64, device=bank.device)
        d = full @ bank
        k = len(online)
        dots = D.dots()  # raw v_j·d
        w0 = self._flat(ctx, model)
        # step size
        ls: dict[str, Any] = {}
        new_losses = None
        if p.line_search and D.d_norm > 0:
            eta, new_losses, ls = self._line_search(ctx, model, w0, d, online, L, dots[:k], D, eta_base)
        else:
            eta = eta_base if D.d_norm > 0 else 0.0
        new_model = self._with_flat(ctx, model, w0 + eta * d) if eta > 0 else S.clone(model)
        # personalization: γ_i (Eq. 8) for the drift vector the client uses, ĝ_i or raw g_i (A5); constraints ĝ_j·d_i ≤ 0
        scales = D.scales[:k]
        drift_scale = scales if p.drift_grad == "normalized" else np.ones(k)
        cross = G[:k, :k] * np.outer(scales, drift_scale)  # [j, i] = ĝ_j·v_i
        a = dots[:k] * scales
        auto = drift_gammas(cross, a) if p.personalize else np.zeros(k)
        gammas = personalization_gammas(auto, p.gamma, p.gamma_rule) if p.personalize else auto
        # Eq. 8 residual: max over i and online j ≠ i of ĝ_j·d_i / μ² (≤ 0 up to rounding for the automatic γ_i)
        eq8 = a[:, None] + gammas[None, :] * (-cross - a[:, None])
        np.fill_diagonal(eq8, -np.inf)
        max_eq8 = float(eq8.max() / D.mu**2) if k > 1 and eta > 0 else None
        info.update(
            eta=eta,
            d=d,
            gamma={c: float(g) for c, g in zip(online, gammas)},
            scale={c: float(s) for c, s in zip(online, scales)},
        )
        internals: dict[str, Any] = {
            "n_online": k,
            "n_stale": len(absent),
            "tau": tau,
            "eta": eta,
            "sigma": D.sigma,
            "mu": D.mu,
            "d_norm": D.d_norm,
            "d_min_norm": D.d_min_norm,
            "fair_used": D.fair_used,
            "fair_F": fair_objective(L),
            "loss_spread": float(L.max() - L.min()),
            "gamma_auto": auto.tolist(),
            "gamma": gammas.tolist(),
            "max_online_dot": float((dots[:k] * scales).max()),
            "max_eq8": max_eq8,
            **ls,
        }
        if p.track_losses and eta > 0:
            if new_losses is None:
                new_losses = self._losses(ctx, new_model, online)
            internals["loss_rose_frac"] = float(np.mean(new_losses > L))
            internals["max_loss_change"] = float((new_losses - L).max())
        elif p.track_losses:
            internals["loss_rose_frac"], internals["max_loss_change"] = 0.0, 0.0
        if p.track_absent:
            recent = [j for j in stored if j not in messages and last_round[j] >= t - tau]
            if recent and eta > 0:
                before, after = self._losses(ctx, model, recent), self._losses(ctx, new_model, recent)
                internals["absent_rose_frac"] = float(np.mean(after > before))
        return {
            **server,
            "model": new_model,
            "bank": bank,
            "last_round": last_round,
            "seen": seen,
            "gram": gram,
            "round_info": info,
            "internals": internals,
        }

    def _line_search(
        self,
        ctx: Any,
        model: S.State,
        w0: torch.Tensor,
        d: torch.Tensor,
        online: list[int],
        L: np.ndarray,
        gd: np.ndarray,
        D: Any,
        eta_base: float,
    ) -> tuple[float, np.ndarray | None, dict[str, Any]]:
        """S-FedPG's Armijo backtracking (Eq. 9) from 2^s η, halving down to the lower bound, with a fallback."""
        p = self.params
        eta = (2.0**p.s) * eta_base
        lb = (0.5**p.s) * eta_base * (D.sigma if p.lower_bound == "paper" else 1.0 / D.sigma)
        F0, Fd = fair_objective(L), float(D.h @ gd)
        tried: list[tuple[float, np.ndarray]] = []
        while True:
            newL = self._losses(ctx, self._with_flat(ctx, model, w0 + eta * d), online)
            tried.append((eta, newL))
            ok = bool(np.all(newL <= L + p.beta * eta * gd))
            if ok and p.armijo == "paper" and D.fair_used:
                ok = fair_objective(newL) <= F0 + p.beta * eta * Fd
            if ok:
                return eta, newL, {"armijo_ok": True, "ls_trials": len(tried)}
            if eta / 2 < lb or len(tried) >= 60:
                break
            eta /= 2
        info = {"armijo_ok": False, "ls_trials": len(tried)}
        if p.fallback == "skip":
            return 0.0, None, info
        if p.fallback == "lower_bound":
            return tried[-1][0], tried[-1][1], info
        lower = [(e, nl) for e, nl in tried if nl.sum() < L.sum()]
        e, nl = max(lower, key=lambda x: x[0]) if lower else min(tried, key=lambda x: x[1].sum())
        return e, nl, info

    def after_aggregate(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
        """Client i builds its P-model ω^t + η d_i = ω^{t+1} + η γ_i(−ĝ_i − d) (Alg. 1 line 15)."""
        info = server["round_info"]
        gamma = info["gamma"].get(cid, 0.0)
        if gamma == 0.0 or info["eta"] == 0.0:
            return {**client, "pmodel": S.clone(server["model"])}
        g = server["bank"][cid]
        v = g * info["scale"][cid] if self.params.drift_grad == "normalized" else g
        w1 = self._flat(ctx, server["model"])
        pm = self._with_flat(ctx, server["model"], w1 + info["eta"] * gamma * (-v - info["d"]))
        return {**client, "pmodel": pm}

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The client's last P-model (protocol P1), the G-model for a client never online."""
        return client.get("pmodel", server["model"])

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """γ_i, fraction of online clients whose loss rose, direction norms, σ, η, stale count, Armijo outcome."""
        return dict(server.get("internals", {}))


SFedPG = variant("s-fedpg", FedPG, "S-FedPG: FedPG with the Armijo line search on the step size (Eq. 9).", line_search=True)
