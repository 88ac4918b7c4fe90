"""Min-norm points of convex hulls of gradients (MGDA; FedMGDA+ and FedPG use them)."""

from __future__ import annotations

import numpy as np


def project_capped_simplex(y: np.ndarray, lower: float = 0.0, upper: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``y`` onto {x : Σx = 1, lower ≤ x ≤ upper} (bisection on the shift)."""
    y = np.asarray(y, dtype=np.float64)
    m = y.shape[0]
    if m * lower > 1 + 1e-12 or m * upper < 1 - 1e-12:
        raise ValueError(f"empty set: need {m}·lower ≤ 1 ≤ {m}·upper (lower={lower}, upper={upper})")
    lo, hi = float(y.min() - upper), float(y.max() - lower)
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        if np.clip(y - tau, lower, upper).sum() > 1.0:
            lo = tau
        else:
            hi = tau
    return np.clip(y - 0.5 * (lo + hi), lower, upper)


def min_norm_weights(
    gram: np.ndarray, lower: float = 0.0, upper: float = 1.0, iters: int = 5000, tol: float = 1e-12
) -> np.ndarray:
    """Weights λ minimizing λᵀGλ over the capped simplex {Σλ = 1, lower ≤ λ ≤ upper}.

    Accelerated projected gradient (FISTA) on the m×m Gram matrix G = QᵀQ of the gradients; converges to
    the exact QP solution (it is checked against a generic solver in the tests).
    """
    G = np.asarray(gram, dtype=np.float64)
    m = G.shape[0]
    step = 1.0 / max(2.0 * np.linalg.eigvalsh(G).max(), 1e-300)
    x = project_capped_simplex(np.full(m, 1.0 / m), lower, upper)
    z, t = x.copy(), 1.0
    f_old = float(x @ G @ x)
    for _ in range(iters):
        x_new = project_capped_simplex(z - step * 2.0 * (G @ z), lower, upper)
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        z = x_new + ((t - 1) / t_new) * (x_new - x)
        x, t = x_new, t_new
        f = float(x @ G @ x)
        if abs(f_old - f) <= tol * max(1.0, abs(f)) and np.abs(z - x).max() < 1e-10:
            break
        f_old = f
    return x


def min_norm_direction(vectors: np.ndarray, epsilon: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Min-norm point d = Σλ_i v_i of the hull of the rows of ``vectors`` with |λ_i − 1/m| ≤ ε.

    With ε ≥ 1 this is the plain MGDA min-norm point, for which ⟨d, v_i⟩ ≥ ‖d‖² for every i, so −d descends
    every objective whose gradient is v_i whenever d ≠ 0. Returns (d, λ).
    """
    V = np.asarray(vectors, dtype=np.float64)
    m = V.shape[0]
    lower, upper = max(0.0, 1.0 / m - epsilon), min(1.0, 1.0 / m + epsilon)
    lam = min_norm_weights(V @ V.T, lower, upper)
    return lam @ V, lam
