"""Factor analysis of stacked client weights (FedFac, Wang, Tang & Li 2023, §4.1, Eqs. 6–7).

The hidden elements of a layer (output neurons / channels) are the *variables*; the rows of the stacked
matrix ``Z`` are (client, fan-in index) pairs. Iterated principal-axis factoring (PAF) on the column
correlation matrix gives the loadings ``A``; an element's communality ``ν_j = Σ_m a_jm²`` is the share of its
variance explained by the common factors. Elements with ``ν_j ≥ τ`` (τ a quantile of ν) are shared, the
others personalized. The number of factors is the smallest m whose cumulative eigenvalue share reaches κ.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import digamma
from threadpoolctl import threadpool_limits

METHODS = ("minres", "paf")
GRAD_TOL = 1e-5  # a fit counts as converged when its projected ULS gradient (max |∂f/∂ψ_j|) is at most this


class FactorConvergenceWarning(UserWarning):
    """A factor analysis stopped before its convergence criterion was met."""


@dataclass(frozen=True)
class FactorResult:
    """Result of one factor analysis: communalities, loadings, factor count, eigenvalues of R and convergence
    (iterations, the last step's max |Δψ|, the projected ULS gradient at the solution, converged or not)."""

    communalities: np.ndarray  # (d,) ν_j in [0, 1]; 0 for dead (constant) elements
    loadings: np.ndarray  # (d, G) unrotated loadings Â
    n_factors: int  # G
    eigenvalues: np.ndarray  # (d,) eigenvalues of the full correlation matrix R, descending
    iterations: int
    dead: np.ndarray  # (d,) bool: zero-variance elements
    last_change: float = float("nan")  # max |ψ_k − ψ_{k−1}| of the last iteration
    gradient: float = float("nan")  # max_j |projected ∂f/∂ψ_j| of the ULS objective at the solution (0 at a fixed point)
    converged: bool = True
    method: str = "paf"

    def convergence(self) -> dict[str, float | int | bool]:
        """Iterations, last change, gradient and the converged flag (what a run records per FA)."""
        return {
            "iterations": self.iterations,
            "last_change": self.last_change,
            "gradient": self.gradient,
            "converged": self.converged,
        }


def stack_clients(weights: Sequence[np.ndarray]) -> np.ndarray:
    """Z of Fig. 4: each client's (d_l, *fan_in) tensor flattened to (fan_in, d_l), stacked over clients."""
    if len(weights) == 0:
        raise ValueError("stack_clients needs at least one client tensor")
    mats = [np.asarray(w, dtype=np.float64).reshape(np.shape(w)[0], -1).T for w in weights]
    d = {m.shape[1] for m in mats}
    if len(d) != 1:
        raise ValueError(f"clients disagree on the number of elements: {sorted(d)}")
    return np.concatenate(mats, axis=0)


def correlation_matrix(z: np.ndarray, eps: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Column correlation matrix R of Z (standardized columns, R = ZsᵀZs/n, diag 1) and the dead-column mask."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"Z must be a 2-D array with at least two rows, got shape {z.shape}")
    sd = z.std(0)
    dead = sd < eps
    zs = (z - z.mean(0)) / np.where(dead, 1.0, sd)
    zs[:, dead] = 0.0
    return zs.T @ zs / zs.shape[0], dead


def n_factors(eigenvalues: np.ndarray, kappa: float) -> int:
    """G = min{m : Σ_{j≤m} γ_j / Σ_j γ_j ≥ κ} (eigenvalues clipped at 0, taken in descending order)."""
    if not 0.0 < kappa <= 1.0:
        raise ValueError(f"kappa must be in (0, 1], got {kappa}")
    g = np.clip(np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1], 0, None)
    if g.sum() <= 0:
        return 1
    r = np.cumsum(g) / g.sum()
    return int(min(np.searchsorted(r, kappa - 1e-12) + 1, len(g)))


def _top_loadings(r: np.ndarray, g: int) -> np.ndarray:
    ev, u = np.linalg.eigh(r)
    ev, u = ev[::-1][:g], u[:, ::-1][:, :g]
    return u * np.sqrt(np.clip(ev, 0, None))


def principal_axis(r: np.ndarray, g: int, max_iter: int = 50, tol: float = 1e-4) -> tuple[np.ndarray, int, float, bool]:
    """Iterated principal-axis factoring (Eq. 7): loadings from the top-g eigenpairs of R − Σ̂_ε, with
    Σ̂_ε = diag(R − ÂÂᵀ) clipped to [0, 1], started from the principal-component solution. Returns the loadings,
    the iterations, the last max |Δψ| and whether it fell below ``tol`` within ``max_iter``."""
    a = _top_loadings(r, g)
    psi_old = None
    it, change, converged = 0, float("nan"), False
    while it < max_iter:
        it += 1
        psi = np.clip(np.diag(r) - (a**2).sum(1), 0.0, 1.0)
        a = _top_loadings(r - np.diag(psi), g)
        if psi_old is not None:
            change = float(np.abs(psi - psi_old).max())
            if change < tol:
                converged = True
                break
        psi_old = psi
    return a, it, change, converged


def uls_objective(psi: np.ndarray, r: np.ndarray, g: int) -> tuple[float, np.ndarray]:
    """ULS (MINRES) objective f(ψ) = ½ min_A ‖R − diag(ψ) − AAᵀ‖²_F over rank-g loadings (A from the top-g
    non-negative eigenpairs of R − diag(ψ)) and its gradient ∂f/∂ψ_j = −Σ_{k discarded} γ_k u_jk².

    The gradient vanishes exactly where ψ = diag(R − AAᵀ): PAF's fixed point is a stationary point of f."""
    ev, u = np.linalg.eigh(r - np.diag(psi))
    resid = ev.copy()
    resid[-g:] = np.minimum(ev[-g:], 0.0)  # kept eigenvalues leave no residual unless negative (clipped loadings)
    return 0.5 * float((resid**2).sum()), -(u**2 * resid).sum(1)


def _projected(grad: np.ndarray, psi: np.ndarray) -> float:
    """max |projected gradient| under the bounds 0 ≤ ψ ≤ 1 (a KKT measure: 0 at a bounded stationary point)."""
    pg = np.where((psi <= 0.0) & (grad > 0), 0.0, grad)
    pg = np.where((psi >= 1.0) & (pg < 0), 0.0, pg)
    return float(np.abs(pg).max()) if pg.size else 0.0


def minres(r: np.ndarray, g: int, max_iter: int = 500, tol: float = GRAD_TOL) -> tuple[np.ndarray, int, float, bool]:
    """Least-squares (MINRES/ULS) factoring: minimize :func:`uls_objective` over 0 ≤ ψ ≤ 1 with L-BFGS-B, started
    from the principal-component uniquenesses. Returns loadings, iterations, the last max |Δψ| and whether the
    projected gradient reached ``tol``."""
    psi0 = np.clip(np.diag(r) - (_top_loadings(r, g) ** 2).sum(1), 0.0, 1.0)
    trace = [psi0]
    res = minimize(
        uls_objective,
        psi0,
        args=(r, g),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * len(psi0),
        callback=lambda x: trace.append(np.array(x)),
        options={"maxiter": max_iter, "ftol": 1e-15, "gtol": tol * 1e-2},
    )
    psi = np.clip(res.x, 0.0, 1.0)
    change = float(np.abs(trace[-1] - trace[-2]).max()) if len(trace) > 1 else 0.0
    grad = _projected(uls_objective(psi, r, g)[1], psi)
    return _top_loadings(r - np.diag(psi), g), int(res.nit), change, grad <= tol


def factor_analysis(
    z: np.ndarray,
    kappa: float = 0.85,
    max_iter: int = 50,
    tol: float = 1e-4,
    method: str = "paf",
    warn: bool = True,
) -> FactorResult:
    """Factor analysis of Z (§4.1): correlation matrix, factor count by κ, loadings by iterated PAF (``paf``:
    ``max_iter`` iterations, stops when max |Δψ| < ``tol``) or by the least-squares fit PAF's fixed point solves
    (``minres``: L-BFGS-B, stops when the projected gradient ≤ ``tol``), communalities. Warns
    (:class:`FactorConvergenceWarning`) when the fit stops before its criterion is met (``warn=False``: silent);
    the result records iterations, last change, gradient and convergence either way.

    BLAS runs single-threaded here: d_l ≤ 512 eigendecompositions are fastest that way and multi-threaded
    BLAS slows down by an order of magnitude on a busy machine."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if max_iter < 1 or not tol > 0:
        raise ValueError(f"max_iter must be >= 1 and tol > 0, got {max_iter}, {tol}")
    with threadpool_limits(1):
        res = _factor_analysis(z, kappa, max_iter, tol, method)
    if warn and not res.converged:
        warnings.warn(
            f"factor analysis ({method}) did not converge in {res.iterations} iterations: last max |Δψ| = "
            f"{res.last_change:.2e}, projected gradient = {res.gradient:.2e} (G = {res.n_factors})",
            FactorConvergenceWarning,
            stacklevel=2,
        )
    return res


def _factor_analysis(z: np.ndarray, kappa: float, max_iter: int, tol: float, method: str) -> FactorResult:
    r, dead = correlation_matrix(z)
    eig = np.clip(np.linalg.eigvalsh(r)[::-1], 0, None)
    g = n_factors(eig, kappa)
    fit = principal_axis if method == "paf" else minres
    a, it, change, converged = fit(r, g, max_iter, tol)
    psi = np.clip(np.diag(r) - (a**2).sum(1), 0.0, 1.0)
    grad = _projected(uls_objective(psi, r, g)[1], psi)
    nu = np.clip((a**2).sum(1), 0.0, 1.0)  # Heywood cases clipped
    nu[dead] = 0.0
    return FactorResult(nu, a, g, eig, it, dead, change, grad, converged, method)


def communalities(loadings: np.ndarray) -> np.ndarray:
    """ν_j = Σ_m a_jm², the row sums of squared loadings."""
    return (np.asarray(loadings) ** 2).sum(1)


def quantile_split(nu: np.ndarray, q: float) -> np.ndarray:
    """Shared mask ζ_j = 1{ν_j ≥ τ} with τ the q-quantile of ν; q ≤ 0: all shared (FedAvg), q ≥ 1: none."""
    nu = np.asarray(nu, dtype=np.float64)
    if q <= 0:
        return np.ones(nu.shape, dtype=bool)
    if q >= 1:
        return np.zeros(nu.shape, dtype=bool)
    return nu >= np.quantile(nu, q)


def n_shared_for_quantile(d: int, q: float) -> int:
    """Number of elements a q-quantile split of d distinct communalities keeps shared (≈ (1−q)·d)."""
    return int(quantile_split(np.arange(d, dtype=float), q).sum())


def threshold_split(nu: np.ndarray, rule: str = "quantile", q: float = 0.5, tau: float | None = None) -> np.ndarray:
    """Shared mask 1{ν_j ≥ τ} under a threshold rule: ``quantile`` (τ = q-quantile of ν, the paper's), ``mean``
    (τ = mean of ν, the official code's default) or ``given`` (τ = ``tau``; None = +∞, every element personal,
    as the official ``--given_threshold`` without a value)."""
    nu = np.asarray(nu, dtype=np.float64)
    if rule == "quantile":
        return quantile_split(nu, q)
    if rule == "mean":
        return nu >= nu.mean()
    if rule == "given":
        return np.zeros(nu.shape, dtype=bool) if tau is None else nu >= tau
    raise ValueError(f"threshold rule must be one of {THRESHOLDS}, got {rule!r}")


THRESHOLDS = ("quantile", "mean", "given")


def fa_partition(
    weights: Sequence[np.ndarray],
    kappa: float = 0.85,
    q: float = 0.5,
    max_iter: int = 50,
    tol: float = 1e-4,
    method: str = "paf",
    threshold: str = "quantile",
    tau: float | None = None,
    warn: bool = True,
) -> tuple[np.ndarray, FactorResult]:
    """FedFac's partition of one layer: (shared mask, factor result) from the clients' layer tensors."""
    res = factor_analysis(stack_clients(weights), kappa, max_iter, tol, method, warn)
    return threshold_split(res.communalities, threshold, q, tau), res


def varimax(loadings: np.ndarray, gamma: float = 1.0, max_iter: int = 100, tol: float = 1e-8) -> np.ndarray:
    """Varimax (orthogonal) rotation of a loading matrix (Kaiser 1958); communalities are invariant."""
    a = np.asarray(loadings, dtype=np.float64)
    p, k = a.shape
    rot = np.eye(k)
    d = 0.0
    for _ in range(max_iter):
        lam = a @ rot
        u, s, vt = np.linalg.svd(a.T @ (lam**3 - (gamma / p) * lam @ np.diag((lam**2).sum(0))))
        rot = u @ vt
        d_new = s.sum()
        if d_new < d * (1 + tol):
            break
        d = d_new
    return a @ rot


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the positive ``labels`` (Mann–Whitney, ties count ½)."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("auc needs both positive and negative labels")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def recovery(nu: np.ndarray, true_shared: np.ndarray) -> dict[str, float]:
    """How well ν recovers the true split: AUC (shared = positive) and partition accuracy with the true proportion."""
    true_shared = np.asarray(true_shared, dtype=bool)
    q = 1.0 - true_shared.mean()
    order = np.argsort(-np.asarray(nu), kind="stable")
    pred = np.zeros_like(true_shared)
    pred[order[: int(true_shared.sum())]] = True
    return {"auc": auc(nu, true_shared), "accuracy": float((pred == true_shared).mean()), "q": float(q)}


def kl_entropy(values: np.ndarray, k: int = 3, eps: float = 1e-10) -> float:
    """Kozachenko–Leonenko k-NN entropy of a 1-D sample (Figs. 1–2, [18]): ψ(N) − ψ(k) + log 2 + mean_i log r_{i,k},
    r_{i,k} the distance of x_i to its k-th nearest neighbour (clipped at ``eps``, so ties do not give −∞)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if k < 1 or len(v) <= k:
        raise ValueError(f"kl_entropy needs 1 <= k < number of values, got k={k} with {len(v)} values")
    r = np.sort(np.abs(v[:, None] - v[None, :]), axis=1)[:, k]  # column 0 is the point itself
    return float(digamma(len(v)) - digamma(k) + np.log(2.0) + np.log(np.maximum(r, eps)).mean())
