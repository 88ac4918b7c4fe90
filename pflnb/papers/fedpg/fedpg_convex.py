"""FedPG on a convex toy (spec fedpg.md §3 items 3, 4, 7, 8): federated softmax regression on scikit-learn's
digits with exact full gradients, the baseline directions of the paper's Fig. 1, and the probability that a
method's direction is a common descent direction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pflnb.data.partition import dirichlet
from pflnb.theory.mgda import fair_objective, fedpg_direction, min_norm_direction, wolfe_min_norm

# ------------------------------------------------------------------------------------ baseline directions


def baseline_directions(G: np.ndarray, losses: np.ndarray, epsilon: float = 0.1) -> dict[str, np.ndarray]:
    """Directions d (to move along, ω ← ω + ηd) of FedAvg (−mean g), FedMGDA+ (ε-capped min-norm point of the
    normalised g), MGDA (exact min-norm point of g) and FedPG (min-norm point of ĝ and ∇F̂, rescaled)."""
    G = np.asarray(G, dtype=np.float64)
    k = G.shape[0]
    unit = G / np.linalg.norm(G, axis=1, keepdims=True)
    dm, _ = min_norm_direction(unit, epsilon)
    mgda = wolfe_min_norm(G @ G.T) @ G
    fedpg = fedpg_direction(G @ G.T, k, losses)
    return {"FedAvg": -G.mean(0), "FedMGDA+": -dm, "MGDA": -mgda, "FedPG": fedpg.coef @ G}


def common_descent_probability(m: int, dim: int, trials: int = 200, seed: int = 0, epsilon: float = 0.1) -> dict[str, float]:
    """Fraction of random instances (g ~ U[−.5, .5]^dim, L ~ U[0, 100]) where each method's direction d satisfies
    g_i·d < 0 for every client; FedPG is also counted 'degenerate' where d = 0 (0 in the hull)."""
    rng = np.random.default_rng([seed, m, dim])
    hits = {"FedAvg": 0, "FedMGDA+": 0, "MGDA": 0, "FedPG": 0}
    zero = 0
    for _ in range(trials):
        G = rng.uniform(-0.5, 0.5, (m, dim))
        L = rng.uniform(0, 100, m)
        dirs = baseline_directions(G, L, epsilon)
        for name, d in dirs.items():
            hits[name] += bool(np.all(G @ d < 0))
        zero += bool(np.linalg.norm(dirs["FedPG"]) == 0)
    out = {k: v / trials for k, v in hits.items()}
    out["FedPG_zero"] = zero / trials
    return out


# ----------------------------------------------------------------------------------- softmax regression


@dataclass
class ConvexToy:
    """Clients' features X_i (with a bias column), one-hot labels Y_i and smoothness constants 𝕃_i."""

    X: list[np.ndarray]
    Y: list[np.ndarray]
    smooth: np.ndarray
    num_classes: int

    def losses_grads(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-client mean cross-entropy L_i(W) and flattened gradients g_i (rows)."""
        Ls, Gs = [], []
        for X, Y in zip(self.X, self.Y):
            Z = X @ W
            Z -= Z.max(1, keepdims=True)
            P = np.exp(Z)
            P /= P.sum(1, keepdims=True)
            Ls.append(float(-np.mean(np.log(np.maximum((P * Y).sum(1), 1e-300)))))
            Gs.append((X.T @ (P - Y) / X.shape[0]).ravel())
        return np.array(Ls), np.stack(Gs)


def digits_toy(num_clients: int = 10, alpha: float = 0.1, seed: int = 0) -> ConvexToy:
    """Softmax regression on sklearn digits (64 pixels / 16 + bias), Dirichlet(α) over ``num_clients`` clients."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = np.hstack([d.data / 16.0, np.ones((len(d.target), 1))])
    parts = dirichlet(d.target, num_clients, alpha, np.random.default_rng(seed), min_samples=10)
    Xs = [X[p] for p in parts]
    Ys = [np.eye(10)[d.target[p]] for p in parts]
    smooth = np.array([0.5 * np.linalg.eigvalsh(x.T @ x / x.shape[0]).max() for x in Xs])
    return ConvexToy(Xs, Ys, smooth, 10)


METHODS = ("fedpg", "mgda", "fedsgd")


def run_convex(toy: ConvexToy, method: str = "fedpg", rounds: int = 300, lr: float | None = None) -> dict[str, np.ndarray]:
    """Full-participation training of the toy. ``fedpg``: FedPG's direction (with ∇F); ``mgda``: without F (M2);
    ``fedsgd``: −mean ĝ. Step η^t = min(1, 2 min_i|g_i·d|/(𝕃_i‖d‖²)) (the descent-lemma bound of Eq. 10) unless a
    fixed ``lr`` is given. Returns per-round losses (T+1, m), ‖d_min‖, ‖d‖ and the step sizes."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    k = len(toy.X)
    W = np.zeros((toy.X[0].shape[1], toy.num_classes))
    losses, dmin, dnorm, steps = [], [], [], []
    for _ in range(rounds):
        L, G = toy.losses_grads(W)
        losses.append(L)
        D = fedpg_direction(G @ G.T, k, L, fair=(method == "fedpg"), direction="fedsgd" if method == "fedsgd" else "mgda")
        d = D.coef @ G
        dmin.append(D.d_min_norm if method != "fedsgd" else np.nan)
        dnorm.append(D.d_norm)
        if D.d_norm == 0:
            steps.append(0.0)
            continue
        if lr is None:
            gd = np.abs(G @ d)
            eta = float(min(1.0, np.min(2 * gd / (toy.smooth * D.d_norm**2))))
        else:
            eta = lr
        steps.append(eta)
        W = W + eta * d.reshape(W.shape)
    losses.append(toy.losses_grads(W)[0])
    return {"losses": np.array(losses), "d_min": np.array(dmin), "d_norm": np.array(dnorm), "eta": np.array(steps)}


def fairness_summary(losses: np.ndarray) -> dict[str, float]:
    """Spread (max − min), std, cos(L, 1) and mean of a final loss vector."""
    L = np.asarray(losses, dtype=np.float64)
    return {"spread": float(L.max() - L.min()), "std": float(L.std()), "cos": -fair_objective(L), "mean": float(L.mean())}


# ------------------------------------------------------------------------------------------- notebook studies

DESCENT_CELLS = ((3, 3), (10, 10), (10, 100), (30, 100), (50, 1000))


def descent_study(trials: int, cells: tuple[tuple[int, int], ...] = DESCENT_CELLS, seed: int = 0) -> tuple[pd.DataFrame, bool]:
    """Theory 2: the probability of common descent per (m, D) cell and method (long table), and whether FedPG's d
    descended every client on every instance where d ≠ 0 (P(FedPG) + P(d = 0) = 1 in every cell)."""
    rows, ok = [], True
    for m, dim in cells:
        p = common_descent_probability(m, dim, trials=trials, seed=seed)
        ok &= abs(p["FedPG"] + p["FedPG_zero"] - 1.0) < 1e-12
        rows += [{"cell": f"({m}, {dim})", "method": k, "probability": v} for k, v in p.items() if k != "FedPG_zero"]
    return pd.DataFrame(rows), bool(ok)


def gamma_by_bisection(ghat: np.ndarray, d: np.ndarray, i: int, iters: int = 60) -> float:
    """Largest γ ∈ [0, 1] with ĝ_j·(d + γ(−ĝ_i − d)) ≤ 0 for every j ≠ i, by bisection (a check of Eq. 8's closed form)."""

    def feasible(g: float) -> bool:
        return bool(np.delete(ghat @ (d + g * (-ghat[i] - d)), i).max() <= 0)

    if feasible(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def convex_study(rounds: int, num_clients: int = 10, alpha: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """Theory 4 on the digits toy: FedPG under bound (10), M2 (no F) and FedSGD at η = 1. Returns the runs, a fairness
    table (final loss spread, std, cos(L, 1), mean, and client-rounds with a loss increase), ‖d_min‖, T·min‖d‖² and
    its ratio at T over T/10."""
    toy = digits_toy(num_clients=num_clients, alpha=alpha, seed=seed)
    runs = {
        "FedPG": run_convex(toy, "fedpg", rounds),
        "M2 (no F)": run_convex(toy, "mgda", rounds),
        "FedSGD (η=1)": run_convex(toy, "fedsgd", rounds, lr=1.0),
    }
    rises = {k: int((np.diff(r["losses"], axis=0) > 1e-12).sum()) for k, r in runs.items()}
    fair = pd.DataFrame({k: fairness_summary(r["losses"][-1]) for k, r in runs.items()}).T
    fair["client-rounds with a loss increase"] = pd.Series(rises)
    dmin = runs["FedPG"]["d_min"]
    tmin = np.arange(1, dmin.size + 1) * np.minimum.accumulate(dmin**2)
    return {
        "runs": runs,
        "fair": fair,
        "rises": rises,
        "d_min": dmin,
        "tmin": tmin,
        "tmin_ratio": float(tmin[-1] / tmin[dmin.size // 10]),
    }


@dataclass(frozen=True)
class TheoryResults:
    """Numbers of the notebook's theory sections that the claims read.

    ``toy_max_dot``: max of g_i·d and ∇F·d for FedPG's d on the Fig. 1 toy; ``random_descent``: on every random
    instance FedPG's d descends every client or is 0; ``convex_rises``: client-rounds whose loss rose on the convex
    toy under bound (10); ``tmin_ratio``: T·min‖d‖² at the last round over its value at T/10; ``spread_fedpg`` /
    ``spread_m2``: final loss spread with and without F; ``a13_d_norm``: ‖d‖ of FedPG on g_1 = g_2 = (1), L = (1, 2);
    ``rounds_convex``: rounds of the convex toy.
    """

    toy_max_dot: float
    random_descent: bool
    convex_rises: int
    tmin_ratio: float
    spread_fedpg: float
    spread_m2: float
    a13_d_norm: float
    rounds_convex: int
