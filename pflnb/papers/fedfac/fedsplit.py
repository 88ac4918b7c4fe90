"""FedSplit theory (Wang, Tang & Li 2023, §3): infinite-width kernels, the two-layer model of Eq. (4) trained
by parallel GD, the Theorem 1 convergence bound and the Theorem 2 generalization term.

Model (Eq. 4): h_c(x) = m1^{-1/2} Σ_q a_q σ(w^p_{c,q}ᵀx) + m2^{-1/2} Σ_r a_r σ(w^s_rᵀx), with fixed a ∈ {±1}.
Each round every client takes G local GD steps on its *sum* loss ½ Σ_{i∈S_c}(h(x_i) − y_i)² (the paper's Δ
formulas drop the 1/n; this is the scaling under which Theorem 1's constants hold), keeps its personal
weights and the server averages the shared ones with step η_g (1/C weights, full participation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

MODES = ("fedsplit", "fedavg", "shared")


def relu_kernel(x: np.ndarray) -> np.ndarray:
    """H^s∞_ij = E_w[x_iᵀx_j 1{wᵀx_i ≥ 0, wᵀx_j ≥ 0}] = x_iᵀx_j (π − arccos cos θ_ij)/(2π) (Definition 1)."""
    x = np.asarray(x, dtype=np.float64)
    g = x @ x.T
    nrm = np.sqrt(np.clip(np.diag(g), 1e-300, None))
    cos = np.clip(g / np.outer(nrm, nrm), -1.0, 1.0)
    return g * (np.pi - np.arccos(cos)) / (2 * np.pi)


def personal_kernel(hs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """H^p∞ = H^s∞ ⊙ B with B_ij = 1{i, j on the same client} (block-diagonal)."""
    groups = np.asarray(groups)
    return hs * (groups[:, None] == groups[None, :])


def empirical_gram(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Finite-width Gram H_ij = (1/m) Σ_r x_iᵀx_j 1{w_rᵀx_i ≥ 0, w_rᵀx_j ≥ 0} (Definition 2) for w of shape (m, d)."""
    act = (np.asarray(x) @ np.asarray(w).T >= 0).astype(np.float64)
    return (x @ x.T) * (act @ act.T) / w.shape[0]


@dataclass(frozen=True)
class TheoryData:
    """Unit-norm inputs x (N, d), targets y (N,), client of each sample."""

    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray


def theory_data(n_clients: int = 5, n_per_client: int = 10, d: int = 10, seed: int = 0) -> TheoryData:
    """x = normalize(μ_c + N(0, I)), μ_c ~ N(0, I); y = tanh(xᵀw*) + tanh(xᵀv_c): a shared and a client signal."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(n_clients, d))
    w_star = rng.normal(size=d)
    v = rng.normal(size=(n_clients, d))
    groups = np.repeat(np.arange(n_clients), n_per_client)
    x = mu[groups] + rng.normal(size=(len(groups), d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.tanh(x @ w_star) + np.tanh(np.einsum("nd,nd->n", x, v[groups]))
    return TheoryData(x, y, groups)


def kernel_eigs(data: TheoryData) -> dict[str, float]:
    """λ_min and λ_max of H^s∞ and H^p∞, and γ = λ_max/λ_min of each."""
    hs = relu_kernel(data.x)
    hp = personal_kernel(hs, data.groups)
    es, ep = np.linalg.eigvalsh(hs), np.linalg.eigvalsh(hp)
    return {
        "lambda_s": float(es[0]),
        "lambda_p": float(ep[0]),
        "lambda_max_s": float(es[-1]),
        "lambda_max_p": float(ep[-1]),
        "gamma_s": float(es[-1] / es[0]),
        "gamma_p": float(ep[-1] / ep[0]),
    }


def _forward(x: np.ndarray, w: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pre = x @ w.T
    return np.maximum(pre, 0.0) @ a / np.sqrt(w.shape[0]), (pre >= 0).astype(np.float64)


def _grad(x: np.ndarray, err: np.ndarray, act: np.ndarray, a: np.ndarray) -> np.ndarray:
    # ∂/∂w_r of ½ Σ_i err_i² with h = m^{-1/2} Σ_r a_r σ(w_rᵀx): m^{-1/2} a_r Σ_i err_i 1{w_rᵀx_i ≥ 0} x_i
    return (act * err[:, None]).T @ x * (a[:, None] / np.sqrt(len(a)))


def train_two_layer(
    data: TheoryData,
    mode: str = "fedsplit",
    m1: int = 2000,
    m2: int = 2000,
    local_steps: int = 5,
    lr: float = 0.02,
    server_lr: float = 1.0,
    rounds: int = 60,
    seed: int = 0,
    common_personal_init: bool = True,
) -> np.ndarray:
    """‖h(t) − y‖² for t = 0..rounds under parallel GD (Eq. 4 model).

    ``fedsplit``: personal branch (m1 units) per client, shared branch (m2) averaged; ``shared``: the same
    two-branch model with both branches averaged; ``fedavg``: one network of m1 + m2 units, averaged.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    with threadpool_limits(1):
        return _train_two_layer(data, mode, m1, m2, local_steps, lr, server_lr, rounds, seed, common_personal_init)


def _train_two_layer(
    data: TheoryData,
    mode: str,
    m1: int,
    m2: int,
    local_steps: int,
    lr: float,
    server_lr: float,
    rounds: int,
    seed: int,
    common_personal_init: bool,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x, y, groups = data.x, data.y, data.groups
    clients = np.unique(groups)
    d = x.shape[1]
    if mode == "fedavg":
        branches = {"s": (rng.normal(size=(m1 + m2, d)), rng.choice([-1.0, 1.0], m1 + m2))}
    else:
        wp = rng.normal(size=(m1, d))
        branches = {"p": (wp, rng.choice([-1.0, 1.0], m1)), "s": (rng.normal(size=(m2, d)), rng.choice([-1.0, 1.0], m2))}
    personal = {}
    if mode == "fedsplit":
        for c in clients:
            personal[c] = branches["p"][0].copy() if common_personal_init else rng.normal(size=(m1, d))

    def weights_of(c: int) -> dict[str, np.ndarray]:
        return {k: (personal[c] if (k == "p" and mode == "fedsplit") else w) for k, (w, _) in branches.items()}

    def predict() -> np.ndarray:
        h = np.zeros(len(y))
        for c in clients:
            idx = groups == c
            for k, w in weights_of(c).items():
                h[idx] += _forward(x[idx], w, branches[k][1])[0]
        return h

    losses = [float(((predict() - y) ** 2).sum())]
    for _ in range(rounds):
        new_shared = {k: np.zeros_like(w) for k, (w, _) in branches.items() if not (k == "p" and mode == "fedsplit")}
        for c in clients:
            idx = groups == c
            xc, yc = x[idx], y[idx]
            ws = {k: w.copy() for k, w in weights_of(c).items()}
            for _ in range(local_steps):
                outs = {k: _forward(xc, w, branches[k][1]) for k, w in ws.items()}
                err = sum(o[0] for o in outs.values()) - yc
                for k in ws:
                    ws[k] -= lr * _grad(xc, err, outs[k][1], branches[k][1])
            for k in new_shared:
                new_shared[k] += (ws[k] - branches[k][0]) / len(clients)
            if mode == "fedsplit":
                personal[c] = ws["p"]
        for k, delta in new_shared.items():
            branches[k] = (branches[k][0] + server_lr * delta, branches[k][1])
        losses.append(float(((predict() - y) ** 2).sum()))
    return np.array(losses)


def rates(data: TheoryData, local_steps: int = 5, lr: float = 0.02, server_lr: float = 1.0) -> dict[str, float]:
    """Theorem 1 per-round contraction factors and spectral radii of the linearized operators.

    FedSplit: 1 − (ρ1λ^s + ρ2λ^p)/2 with ρ1 = η_g η_l G / C, ρ2 = η_l G; FedAvg: 1 − ρ1 λ^s / 2.
    Linearized: e(t+1) ≈ (I − ρ1H^s − ρ2H^p) e(t) (FedSplit), (I − ρ1H^s) e(t) (FedAvg),
    (I − 2ρ1H^s) e(t) (the two-branch model fully shared).
    """
    c = len(np.unique(data.groups))
    hs = relu_kernel(data.x)
    hp = personal_kernel(hs, data.groups)
    ev = kernel_eigs(data)
    rho1, rho2 = server_lr * lr * local_steps / c, lr * local_steps
    eye = np.eye(len(data.y))

    def radius(op: np.ndarray) -> float:
        return float(np.max(np.abs(np.linalg.eigvalsh(op))))

    return {
        "rho1": rho1,
        "rho2": rho2,
        "bound_fedsplit": 1.0 - (rho1 * ev["lambda_s"] + rho2 * ev["lambda_p"]) / 2,
        "bound_fedavg": 1.0 - rho1 * ev["lambda_s"] / 2,
        "radius_fedsplit": radius(eye - rho1 * hs - rho2 * hp),
        "radius_fedavg": radius(eye - rho1 * hs),
        "radius_shared": radius(eye - 2 * rho1 * hs),
    }


def thm2_term(data: TheoryData) -> float:
    """B(C) = sqrt(2 (C/n) yᵀ(H^s∞ + H^p∞)⁻¹ y), the data-dependent term of Theorem 2 (n samples per client)."""
    c = len(np.unique(data.groups))
    n = len(data.y) / c
    hs = relu_kernel(data.x)
    h = hs + personal_kernel(hs, data.groups)
    return float(np.sqrt(2 * (c / n) * data.y @ np.linalg.solve(h, data.y)))


def arora_term(data: TheoryData) -> float:
    """The FedAvg / Arora et al. (2019) term sqrt(2 yᵀ(H^s∞)⁻¹y / N), for reference."""
    return float(np.sqrt(2 * data.y @ np.linalg.solve(relu_kernel(data.x), data.y) / len(data.y)))
