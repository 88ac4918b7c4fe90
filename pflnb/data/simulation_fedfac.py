"""The simulation study of FedFac (Wang, Tang & Li 2023, §4.3.1, Eq. 8) as a federated data source.

Client c has covariates x_c = (x^p_c, x^s_c) ∈ R^d: d1 personalized covariates x^p_c ~ N(μ_c, Σ) with
Σ_ij = 0.5^|i−j| and μ_c ~ N(0, I) drawn once per client, and d2 = round(α·d) shared covariates
x^s_c ~ N(0, I). The true model is a one-hidden-layer ReLU network with m = m1 + m2 units, p = m2/m shared:
shared units r have w_r = (w^sp ~ U(−0.1, 0.1)^{d1}, w^ss ~ U(−1, 1)^{d2}), identical for all clients;
personalized units q of client c have w_cq = (w^pp ~ N(μ_c, I), w^ps ~ U(−0.1, 0.1)^{d2}); the output
weights a ~ N(0, I_m) are common. y* = h*_c(x) + ε, ε ~ N(0, c²).

Labels: the paper's y = 1{y* > 0} gives (almost) one class per client, because Σ_q a_q μ_cᵀx dominates
(spec ambiguity A17); ``center=True`` (default) thresholds at the client's median instead, y = 1{y* > med_c},
which gives balanced classes. ``center=False`` keeps the literal rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pflnb.data.federated import ClientData, FederatedDataset, Split


@dataclass(frozen=True)
class Simulation:
    """One draw of the §4.3.1 DGP: data per client and the true parameters."""

    x: list[np.ndarray]  # per client (n, d)
    y: list[np.ndarray]  # per client (n,) in {0, 1}
    y_star: list[np.ndarray]  # per client (n,) latent response
    w_personal: np.ndarray  # (C, m1, d) personalized units per client
    w_shared: np.ndarray  # (m2, d) shared units
    a: np.ndarray  # (m,) output weights (personalized units first)
    mu: np.ndarray  # (C, d1) client means
    d1: int
    d2: int

    @property
    def m1(self) -> int:
        """Number of personalized hidden units."""
        return int(self.w_personal.shape[1])

    @property
    def m(self) -> int:
        """Number of hidden units."""
        return self.m1 + int(self.w_shared.shape[0])

    @property
    def true_shared(self) -> np.ndarray:
        """(m,) bool: True for the shared units (the last m2)."""
        return np.arange(self.m) >= self.m1

    def client_weights(self, c: int) -> np.ndarray:
        """Client c's true hidden-layer weights, (m, d): personalized units first, then the shared ones."""
        return np.concatenate([self.w_personal[c], self.w_shared], axis=0)


def _ar1_cov(d: int, rho: float = 0.5) -> np.ndarray:
    idx = np.arange(d)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def simulate(
    n_clients: int = 20,
    n_per_client: int = 100,
    d: int = 100,
    m: int = 200,
    shared_frac: float = 0.5,
    alpha_cov: float = 0.4,
    noise_sd: float = 1.0,
    center: bool = True,
    seed: int = 0,
) -> Simulation:
    """Draw the Eq. (8) DGP: ``shared_frac`` = p = m2/m, ``alpha_cov`` = α = d2/d, noise sd c = ``noise_sd``."""
    if not 0.0 <= shared_frac <= 1.0 or not 0.0 <= alpha_cov <= 1.0:
        raise ValueError(f"shared_frac and alpha_cov must be in [0, 1], got {shared_frac}, {alpha_cov}")
    if n_clients < 1 or n_per_client < 2 or d < 1 or m < 1:
        raise ValueError("n_clients >= 1, n_per_client >= 2, d >= 1 and m >= 1 are required")
    rng = np.random.default_rng(seed)
    d2 = int(round(alpha_cov * d))
    d1 = d - d2
    m2 = int(round(shared_frac * m))
    m1 = m - m2
    chol = np.linalg.cholesky(_ar1_cov(d1)) if d1 else np.zeros((0, 0))
    mu = rng.normal(size=(n_clients, d1))
    w_shared = np.concatenate([rng.uniform(-0.1, 0.1, (m2, d1)), rng.uniform(-1.0, 1.0, (m2, d2))], axis=1)
    a = rng.normal(size=m)
    w_personal = np.concatenate(
        [mu[:, None, :] + rng.normal(size=(n_clients, m1, d1)), rng.uniform(-0.1, 0.1, (n_clients, m1, d2))], axis=2
    )
    xs, ys, ystars = [], [], []
    for c in range(n_clients):
        xp = mu[c] + rng.normal(size=(n_per_client, d1)) @ chol.T
        x = np.concatenate([xp, rng.normal(size=(n_per_client, d2))], axis=1)
        w = np.concatenate([w_personal[c], w_shared], axis=0)
        y_star = np.maximum(x @ w.T, 0.0) @ a + noise_sd * rng.normal(size=n_per_client)
        thr = np.median(y_star) if center else 0.0
        xs.append(x.astype(np.float32))
        ystars.append(y_star)
        ys.append((y_star > thr).astype(np.int64))
    return Simulation(xs, ys, ystars, w_personal, w_shared, a, mu, d1, d2)


def to_federated(sim: Simulation, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2), seed: int = 0) -> FederatedDataset:
    """The simulation as a FederatedDataset (inputs shaped (N, 1, 1, d), two classes), split per client."""
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    rng = np.random.default_rng(seed)
    clients = []
    d = sim.x[0].shape[1]
    for c, (x, y) in enumerate(zip(sim.x, sim.y)):
        n = len(y)
        order = rng.permutation(n)
        n_tr, n_va = int(round(fractions[0] * n)), int(round(fractions[1] * n))
        parts = np.split(order, [n_tr, n_tr + n_va])
        splits = [Split(torch.from_numpy(x[p]).reshape(-1, 1, 1, d), torch.from_numpy(y[p])) for p in parts]
        clients.append(ClientData(c, f"client{c}", "simulation", *splits))
    info = {"d1": sim.d1, "d2": sim.d2, "m1": sim.m1, "m": sim.m}
    return FederatedDataset("simulation-fedfac", clients, 2, (1, 1, d), info=info)


SPLITS_MOTIVATION = ("iid", "non-iid")


def digits_clients(
    split: str, n_clients: int = 50, seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
) -> FederatedDataset:
    """scikit-learn's bundled digits (1797 images, 8×8, scaled to [0, 1]) over ``n_clients`` (Figs. 1–2, §3.8):
    ``"iid"`` deals a random permutation into equal shards; ``"non-iid"`` splits each digit into
    ``n_clients / 10`` groups, so client c holds only digit ``c // (n_clients / 10)``."""
    from sklearn.datasets import load_digits

    if split not in SPLITS_MOTIVATION:
        raise ValueError(f"split must be one of {SPLITS_MOTIVATION}, got {split!r}")
    if split == "non-iid" and (n_clients < 10 or n_clients % 10):
        raise ValueError(f"n_clients must be a positive multiple of 10 for the non-iid split, got {n_clients}")
    if not 1 <= n_clients <= 180:
        raise ValueError(f"n_clients must be in 1..180 (about 10 samples per client at least), got {n_clients}")
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    if split == "iid":
        parts = np.array_split(rng.permutation(len(y)), n_clients)
    else:
        groups = n_clients // 10
        parts = [g for k in range(10) for g in np.array_split(rng.permutation(np.flatnonzero(y == k)), groups)]
    clients = []
    for c, idx in enumerate(parts):
        n = len(idx)
        n_tr, n_va = int(round(fractions[0] * n)), int(round(fractions[1] * n))
        cut = np.split(idx, [n_tr, n_tr + n_va])
        splits = [Split(torch.from_numpy(x[p]), torch.from_numpy(y[p])) for p in cut]
        domain = "all digits" if split == "iid" else f"digit {int(y[idx[0]])}"
        clients.append(ClientData(c, f"client{c}", domain, *splits))
    return FederatedDataset(f"digits-{split}", clients, 10, (1, 8, 8), info={"split": split})
