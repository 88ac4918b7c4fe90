"""Min-norm points of convex hulls of gradients (MGDA; FedMGDA+ and FedPG use them).

- :func:`wolfe_min_norm` — Wolfe's exact minimum-norm-point algorithm in Gram form (finite, numpy only);
- :func:`min_norm_weights` / :func:`min_norm_direction` — the (capped-)simplex QP used by FedMGDA+;
- :func:`fair_weights` — the fair objective F(ω) = −cos(L(ω), 1) and its gradient ∇F = Σ h_i g_i (FedPG Sec. 3.2.1);
- :func:`fedpg_direction` — FedPG's common descent direction (QP (5) over normalised, stale and fair columns),
  computed entirely from the Gram matrix of the stored gradients;
- :func:`drift_gammas` — the closed form of the direction-drift coefficients γ_i (FedPG Eq. (8)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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


def _affine_minimizer(G: np.ndarray, S: list[int]) -> np.ndarray:
    """Weights α (Σα = 1) of the min-norm point of the affine hull of the points S (Gram form).

    Solved in the points' own scale: with β_j = ‖p_j‖α_j the KKT system holds the unit-diagonal Gram matrix, so
    points of very different norms keep their relative accuracy.
    """
    s = len(S)
    Gs = G[np.ix_(S, S)]
    nr = np.sqrt(np.maximum(np.diag(Gs), 1e-300))
    c = 1.0 / nr
    cmax = float(c.max())
    A = np.zeros((s + 1, s + 1))
    A[:s, :s] = Gs / np.outer(nr, nr)
    A[:s, s] = c / cmax
    A[s, :s] = c / cmax
    rhs = np.zeros(s + 1)
    rhs[s] = 1.0 / cmax
    alpha = np.linalg.lstsq(A, rhs, rcond=None)[0][:s] / nr
    return alpha / alpha.sum() if abs(alpha.sum()) > 1e-300 else np.full(s, 1.0 / s)


def wolfe_min_norm(gram: np.ndarray, tol: float = 1e-12, max_iter: int | None = None) -> np.ndarray:
    """Weights λ ∈ Δ_K of the minimum-norm point of conv{p_1..p_K} (Wolfe 1976), from the Gram matrix pᵢ·pⱼ.

    Exact up to rounding: stops when x·p_k ≥ ‖x‖² − ε_k for every vertex k (x = Σλ_j p_j), the optimality (KKT)
    condition of min ½‖Σλ_j p_j‖² over the simplex. The slack is scale-aware, relative to the size of the quantities
    compared rather than to the largest point: ε_k = ‖p_k‖·(tol·‖x‖ + 8K·u·Σ_j λ_j‖p_j‖), the relative tolerance
    ``tol`` on p_k·x plus the rounding bound of the Gram-form products (u: machine epsilon). Points of very
    different norms (2000 next to 1e-3) are then resolved at their own scale.
    """
    G = np.asarray(gram, dtype=np.float64)
    G = 0.5 * (G + G.T)
    K = G.shape[0]
    if K == 0:
        raise ValueError("wolfe_min_norm needs at least one point")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    norms = np.sqrt(np.maximum(np.diag(G), 0.0))
    rounding = 8.0 * K * np.finfo(np.float64).eps
    max_iter = max_iter or 50 * K + 100
    S = [int(np.argmin(np.diag(G)))]
    w = np.array([1.0])
    for _ in range(max_iter):
        lam = np.zeros(K)
        lam[S] = w
        Gl = G @ lam
        xx = float(lam @ Gl)
        slack = norms * (tol * math.sqrt(max(xx, 0.0)) + rounding * float(lam @ norms))
        k = int(np.argmin(Gl))
        if np.all(Gl >= xx - slack) or k in S:
            break
        S.append(k)
        w = np.append(w, 0.0)
        for _ in range(K + 5):  # minor cycles: move to the affine minimizer, dropping vertices on the way
            alpha = _affine_minimizer(G, S)
            if np.all(alpha > 1e-15):
                w = alpha
                break
            neg = alpha <= 1e-15
            theta = float(np.min(w[neg] / np.maximum(w[neg] - alpha[neg], 1e-300)))
            theta = min(max(theta, 0.0), 1.0)
            w = w + theta * (alpha - w)
            keep = w > 1e-15
            if not keep.any():  # pragma: no cover - numerical safety
                keep[int(np.argmax(w))] = True
            S = [s for s, kp in zip(S, keep) if kp]
            w = w[keep] / w[keep].sum()
    lam = np.zeros(K)
    lam[S] = np.maximum(w, 0.0)
    return lam / lam.sum()


def _box_simplex_active_set(G: np.ndarray, lower: float, upper: float, tol: float = 1e-12, iters: int = 0) -> np.ndarray:
    """Exact min of λᵀGλ over {Σλ = 1, lower ≤ λ ≤ upper} by a primal active-set method (finite)."""
    m = G.shape[0]
    lam = project_capped_simplex(np.full(m, 1.0 / m), lower, upper)
    at: dict[int, float] = {}  # working set: index -> bound value
    scale = max(float(np.abs(G).max()), 1e-300)
    for _ in range(iters or 100 * m + 100):
        free = [j for j in range(m) if j not in at]
        g = 2.0 * G @ lam
        p = np.zeros(m)
        if free:
            f = len(free)
            A = np.zeros((f + 1, f + 1))
            A[:f, :f] = 2.0 * G[np.ix_(free, free)]
            A[:f, f] = 1.0
            A[f, :f] = 1.0
            sol = np.linalg.lstsq(A, np.r_[-g[free], 0.0], rcond=None)[0]
            p[free] = sol[:f]
            nu = float(sol[f])
        if not free or np.abs(p).max() <= 1e-13:
            if not free:
                lo_nu = max([-g[j] for j, b in at.items() if b == lower], default=-np.inf)
                hi_nu = min([-g[j] for j, b in at.items() if b == upper], default=np.inf)
                nu = 0.5 * (lo_nu + hi_nu) if np.isfinite(lo_nu + hi_nu) else (lo_nu if np.isfinite(lo_nu) else hi_nu)
            worst, worst_j = tol * scale, None
            for j, b in at.items():
                viol = -(g[j] + nu) if b == lower else (g[j] + nu)
                if viol > worst:
                    worst, worst_j = viol, j
            if worst_j is None:
                return lam
            del at[worst_j]
            continue
        alpha, block = 1.0, None
        for j in free:
            if p[j] < -1e-300 and lam[j] + p[j] < lower:
                a = (lower - lam[j]) / p[j]
                if a < alpha:
                    alpha, block = a, (j, lower)
            elif p[j] > 1e-300 and lam[j] + p[j] > upper:
                a = (upper - lam[j]) / p[j]
                if a < alpha:
                    alpha, block = a, (j, upper)
        lam = lam + max(alpha, 0.0) * p
        if block is not None:
            lam[block[0]] = block[1]
            at[block[0]] = block[1]
    return lam  # pragma: no cover - iteration cap


def min_norm_weights(gram: np.ndarray, lower: float = 0.0, upper: float = 1.0, iters: int = 0, tol: float = 1e-12) -> np.ndarray:
    """Weights λ minimizing λᵀGλ over the capped simplex {Σλ = 1, lower ≤ λ ≤ upper}.

    The plain simplex (lower ≤ 0, upper ≥ 1) is solved by Wolfe's algorithm; a capped simplex (FedMGDA+ with
    ε < 1) by a primal active-set method (``iters`` caps its iterations, 0: 100m + 100; ``tol`` is its relative
    KKT tolerance). Both are exact and checked against scipy in the tests.
    """
    G = np.asarray(gram, dtype=np.float64)
    G = 0.5 * (G + G.T)
    m = G.shape[0]
    if m * lower > 1 + 1e-12 or m * upper < 1 - 1e-12:
        raise ValueError(f"empty set: need {m}·lower ≤ 1 ≤ {m}·upper (lower={lower}, upper={upper})")
    if lower <= 0.0 and upper >= 1.0:
        return wolfe_min_norm(G)
    return _box_simplex_active_set(G, max(lower, 0.0), min(upper, 1.0), tol, iters)


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


# ------------------------------------------------------------------------------------------ fair objective


def fair_objective(losses: np.ndarray) -> float:
    """F = −cos(L, 1) = −(L·1)/(‖L‖‖1‖) of the loss vector (FedPG Eq. 3); −1 iff all losses are equal."""
    L = np.asarray(losses, dtype=np.float64)
    return float(-L.sum() / (np.linalg.norm(L) * math.sqrt(L.size)))


def fair_weights(losses: np.ndarray) -> np.ndarray:
    """h with ∇F = Σ_i h_i g_i: h = (1/‖L‖)((L·1)L/(‖1‖‖L‖²) − 1/‖1‖) (FedPG Sec. 3.2.1, chain rule)."""
    L = np.asarray(losses, dtype=np.float64)
    nL, n1 = float(np.linalg.norm(L)), math.sqrt(L.size)
    return (L.sum() * L / (n1 * nL**2) - 1.0 / n1) / nL


def fair_gradient(gradients: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """∇F(ω) = Gᵀh for the rows of ``gradients`` (client gradients g_i) and the client losses."""
    return fair_weights(losses) @ np.asarray(gradients, dtype=np.float64)


# ------------------------------------------------------------------------------------------- FedPG direction

DIRECTIONS = ("mgda", "fedsgd")
FAIR_FROM = ("raw", "normalized")
# ‖d_min‖ ≤ STATIONARY_RTOL·μ counts as d_min = 0 (Pareto stationary). The Gram form computes ‖d_min‖² = λᵀQλ with an
# absolute rounding error of order u·μ² (u = 2.2e-16) and resolves λ to about √u, so a smaller ‖d_min‖ is rounding
# noise: rescaled by σ = ‖d_r‖/‖d_min‖ it would become a full step in an arbitrary (possibly ascending) direction.
STATIONARY_RTOL = 1e-6


@dataclass
class Direction:
    """FedPG's direction d = Σ_j coef_j v_j over the stored vectors v (online first, then stale), with internals."""

    coef: np.ndarray  # coefficients of d over the basis vectors
    lam: np.ndarray  # QP weights over the columns (online, stale, [fair])
    sigma: float  # ‖d_r‖/‖d_min‖
    mu: float  # mean norm of the online gradients
    scales: np.ndarray  # μ/‖v_j‖ per basis vector (normalised vector ĝ_j = scales_j v_j)
    fair_used: bool
    h: np.ndarray  # fair weights over the online gradients (zeros when unused)
    d_min_norm: float
    d_norm: float
    gram: np.ndarray = field(repr=False)  # basis Gram matrix (raw)

    def dots(self) -> np.ndarray:
        """v_j·d for every basis vector j (raw vectors)."""
        return self.gram @ self.coef


def fedpg_direction(
    gram: np.ndarray,
    n_online: int,
    losses: np.ndarray,
    fair: bool = True,
    fair_from: str = "raw",
    direction: str = "mgda",
    fair_angle_deg: float | None = None,
) -> Direction:
    """FedPG's common descent direction from the Gram matrix of the basis vectors (FedPG Eq. 5, Alg. 1 l. 8–11).

    The basis is the ``n_online`` online client gradients followed by the stale gradients of recent absent
    clients. Columns of Q: every basis vector rescaled to the online mean norm μ, plus ∇F̂ = ∇F·μ/‖∇F‖ when
    ``fair`` (omitted when all online losses are equal or ∇F ≈ 0). d_min = −Qλ* with λ* the exact min-norm
    weights; d = σ d_min with σ = ‖d_r‖/‖d_min‖, d_r = −mean_i ĝ_i, and d = 0 (stationary) when ‖d_min‖ is below
    the Gram form's resolution, :data:`STATIONARY_RTOL`·μ. ``direction='fedsgd'`` (ablation M1) returns d = d_r.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if fair_from not in FAIR_FROM:
        raise ValueError(f"fair_from must be one of {FAIR_FROM}, got {fair_from!r}")
    Graw = np.asarray(gram, dtype=np.float64)
    B, k = Graw.shape[0], int(n_online)
    if not 1 <= k <= B:
        raise ValueError(f"n_online must be in [1, {B}], got {n_online}")
    norms = np.sqrt(np.maximum(np.diag(Graw), 0.0))
    mu = float(norms[:k].mean())
    scales = mu / np.maximum(norms, 1e-300)
    C = np.diag(scales)  # columns as coefficient rows over the basis
    h = np.zeros(k)
    fair_used = False
    L = np.asarray(losses, dtype=np.float64)
    if fair and k > 1:
        cos = float(L.sum() / (np.linalg.norm(L) * math.sqrt(k)))
        gate = fair_angle_deg is None or math.degrees(math.acos(min(1.0, cos))) > fair_angle_deg
        hv = fair_weights(L)
        coef_f = np.zeros(B)
        coef_f[:k] = hv if fair_from == "raw" else hv * scales[:k]
        nf = math.sqrt(max(float(coef_f @ Graw @ coef_f), 0.0))
        if gate and 1.0 - cos > 1e-9 and nf > 1e-12 * mu:
            C = np.vstack([C, coef_f * mu / nf])
            h, fair_used = hv, True
    coef_r = np.zeros(B)
    coef_r[:k] = -scales[:k] / k
    Q = C @ Graw @ C.T
    if direction == "fedsgd":
        lam = np.zeros(C.shape[0])
        lam[:k] = 1.0 / k
    else:
        lam = wolfe_min_norm(Q)
    coef_min = -(lam @ C)
    d_min_norm = math.sqrt(max(float(coef_min @ Graw @ coef_min), 0.0))
    dr_norm = math.sqrt(max(float(coef_r @ Graw @ coef_r), 0.0))
    if d_min_norm <= STATIONARY_RTOL * mu:  # below the Gram-form resolution: Pareto stationary, no step
        coef, sigma = np.zeros(B), 1.0
    else:
        sigma = dr_norm / d_min_norm
        coef = sigma * coef_min
    d_norm = math.sqrt(max(float(coef @ Graw @ coef), 0.0))
    return Direction(coef, lam, sigma, mu, scales, fair_used, h, d_min_norm, d_norm, Graw)


def drift_gammas(gram_hat: np.ndarray, a: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Closed-form γ_i (FedPG Eq. 8): the largest γ ∈ [0, 1] with u_j·d_i(γ) ≤ 0 for every j ≠ i, where
    d_i(γ) = d + γ(−v_i − d) drifts along client i's vector v_i (ĝ_i or raw g_i), ``gram_hat[j, i]`` = u_j·v_i for
    the constraint vectors u_j (client j's gradient, at any positive scale) and ``a[j]`` = u_j·d; 0 when no γ is
    feasible. With v = u = ĝ, ``gram_hat`` is the Gram matrix of the normalised gradients.

    Each constraint is affine in γ: a_j + γ b_j ≤ 0 with b_j = −u_j·v_i − a_j. ``tol`` lets a constraint hold
    within ``tol`` (absolute) to absorb rounding.
    """
    Gh = np.asarray(gram_hat, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    k = a.size
    out = np.zeros(k)
    for i in range(k):
        lo, hi, ok = 0.0, 1.0, True
        for j in range(k):
            if j == i:
                continue
            aj = a[j] - tol
            b = -Gh[j, i] - a[j]
            if b > 0:
                hi = min(hi, -aj / b)
            elif b < 0:
                lo = max(lo, -aj / b)
            elif aj > 0:
                ok = False
        out[i] = hi if ok and hi >= lo and hi >= 0.0 else 0.0
    return out


def personalization_gammas(gamma_auto: np.ndarray, user: float | None, rule: str = "max") -> np.ndarray:
    """The γ_i actually used: auto, or with a user γ either max(γ_i, γ) (default reading) or γ (override)."""
    g = np.asarray(gamma_auto, dtype=np.float64)
    if user is None:
        return g.copy()
    if rule == "max":
        return np.maximum(g, user)
    if rule == "override":
        return np.full_like(g, user)
    raise ValueError(f"gamma_rule must be 'max' or 'override', got {rule!r}")
