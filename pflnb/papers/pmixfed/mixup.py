"""Mixing degree vs learning rate: the exact identities E1–E8 of the pMixFed spec (§3.1), the multi-step
deviation, Lemma 1 and the noise floor that Theorem 3 misses (§3.2); and the exact facts behind Figs. 7 and 8 (the
Beta(α, α) pdfs of the random mix factor, the μ(acc) curves of Eq. 6 against the simple rule).

Convention: the paper's λ weights the OLD / GLOBAL model, G_new = λ·G + (1 − λ)·Σ_k Ω_k L_k. The correct
reading of Thm 1/4 is 1 − λ = η_g/η_l; the paper prints λ = η_g/η_l, which agrees only at λ = 1/2.
All routines work in float64 numpy (torch for the Adam identity) on explicit toy problems.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd
import torch
from scipy import stats

from pflnb.algorithms.pmixfed import mu_sigmoid, mu_simple

HOST = torch.device("cpu")  # numpy in, numpy out: the torch Adam identities run on the host

GradFn = Callable[[np.ndarray], np.ndarray]


# ------------------------------------------------------------------------------------------ toy problems
@dataclass(frozen=True)
class Quadratic:
    """F(w) = ½ (w − b)ᵀ A (w − b) with A symmetric positive definite."""

    A: np.ndarray
    b: np.ndarray

    def loss(self, w: np.ndarray) -> float:
        """F(w)."""
        e = w - self.b
        return float(0.5 * e @ self.A @ e)

    def grad(self, w: np.ndarray) -> np.ndarray:
        """∇F(w) = A (w − b)."""
        return self.A @ (w - self.b)


def quadratic_clients(k: int = 4, d: int = 6, seed: int = 0) -> tuple[list[Quadratic], np.ndarray]:
    """K heterogeneous quadratic clients (A_k = Q_kQ_kᵀ/d + 0.1 I, b_k ~ N(0, I)) and Ω ~ Dirichlet(1)."""
    rng = np.random.default_rng(seed)
    clients = []
    for _ in range(k):
        q = rng.standard_normal((d, d))
        clients.append(Quadratic(q @ q.T / d + 0.1 * np.eye(d), rng.standard_normal(d)))
    return clients, rng.dirichlet(np.ones(k))


def logistic_loss_grad(x: np.ndarray, y: np.ndarray, c: float = 0.0) -> GradFn:
    """Gradient of the mean logistic loss (labels in {0, 1}) plus (c/2)‖w‖²: a non-quadratic loss."""

    def grad(w: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        return x.T @ (p - y) / len(y) + c * w

    return grad


# ------------------------------------------------------------------------------------------ mixing maps
def mix(g: np.ndarray, avg: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """Eq. 15: λ·G + (1 − λ)·Ā (λ a scalar or one value per coordinate: layer-wise mixing)."""
    return lam * g + (1.0 - lam) * avg


def local_sgd(w: np.ndarray, grad: GradFn, lr: float | np.ndarray, steps: int) -> np.ndarray:
    """``steps`` plain gradient steps w ← w − lr·∇F(w) (lr a scalar or per coordinate)."""
    w = np.array(w, dtype=np.float64)
    for _ in range(steps):
        w = w - lr * grad(w)
    return w


def mixed_round(
    g: np.ndarray, grads: Sequence[GradFn], omega: np.ndarray, lam: float | np.ndarray, lr: float, steps: int
) -> np.ndarray:
    """One pMixFed aggregation round from a full broadcast (L_k = G): local SGD then G ← λG + (1−λ)ΣΩ_k L_k."""
    avg = sum(o * local_sgd(g, gr, lr, steps) for o, gr in zip(omega, grads))
    return mix(g, avg, lam)


def fedsgd_step(g: np.ndarray, grads: Sequence[GradFn], omega: np.ndarray, lr: float | np.ndarray) -> np.ndarray:
    """Eq. 12: G ← G − η_g Σ_k Ω_k ∇F_k(G) (η_g a scalar or per coordinate)."""
    return g - lr * sum(o * gr(g) for o, gr in zip(omega, grads))


def fedavg_server_lr(
    g: np.ndarray, grads: Sequence[GradFn], omega: np.ndarray, lr: float, steps: int, server_lr: float | np.ndarray
) -> np.ndarray:
    """FedAvg with a server learning rate: G ← G − η_s Δ, Δ = Σ_k Ω_k (G − L_k^(r)) (FedOpt view)."""
    delta = sum(o * (g - local_sgd(g, gr, lr, steps)) for o, gr in zip(omega, grads))
    return g - server_lr * delta


def e1_residuals(lam: float, lr: float, clients: Sequence[Quadratic], omega: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """(exact, paper): max-abs gap of one-step mixing to FedSGD with η_g = (1−λ)η_l (E1), and with the
    paper's printed η_g = λ·η_l (Thm 1/4)."""
    grads = [c.grad for c in clients]
    mixed = mixed_round(g, grads, omega, lam, lr, 1)
    exact = fedsgd_step(g, grads, omega, (1.0 - lam) * lr)
    paper = fedsgd_step(g, grads, omega, lam * lr)
    return float(np.max(np.abs(mixed - exact))), float(np.max(np.abs(mixed - paper)))


# ------------------------------------------------------------------------------------------ E4 (Adam)
def adam_first_step(w: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """One step of torch's Adam from a fresh state (float64)."""
    p = torch.nn.Parameter(torch.tensor(w, dtype=torch.float64, device=HOST))
    opt = torch.optim.Adam([p], lr=lr)
    p.grad = torch.tensor(grad, dtype=torch.float64, device=HOST)
    opt.step()
    return p.detach().cpu().numpy().copy()


def adam_steps(w: np.ndarray, grad: GradFn, lr: float, steps: int) -> np.ndarray:
    """``steps`` steps of torch's Adam (fresh state, float64) on the gradient field ``grad``."""
    p = torch.nn.Parameter(torch.tensor(w, dtype=torch.float64, device=HOST))
    opt = torch.optim.Adam([p], lr=lr)
    for _ in range(steps):
        p.grad = torch.tensor(grad(p.detach().cpu().numpy()), dtype=torch.float64, device=HOST)
        opt.step()
    return p.detach().cpu().numpy().copy()


# ------------------------------------------------------------------------------------------ E5 / E6
def ema_rounds(g0: np.ndarray, averages: Sequence[np.ndarray], lam: float | np.ndarray) -> list[np.ndarray]:
    """Iterate G^{s+1} = λG^s + (1−λ)Ā^{(s+1)} over the given averages; returns G^0..G^t."""
    out = [np.asarray(g0, dtype=np.float64)]
    for a in averages:
        out.append(mix(out[-1], a, lam))
    return out


def ema_closed_form(g0: np.ndarray, averages: Sequence[np.ndarray], lam: float | np.ndarray) -> np.ndarray:
    """E5: G^t = λ^t G^0 + (1 − λ) Σ_{s<t} λ^{t−1−s} Ā^{(s+1)}."""
    t = len(averages)
    out = lam**t * np.asarray(g0, dtype=np.float64)
    for s, a in enumerate(averages):
        out = out + (1.0 - lam) * lam ** (t - 1 - s) * a
    return out


def fedavg_affine_map(clients: Sequence[Quadratic], omega: np.ndarray, lr: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """FedAvg's round map on quadratic clients is affine, G ↦ M G + v; returns (M, v)."""
    d = clients[0].b.shape[0]
    m, v = np.zeros((d, d)), np.zeros(d)
    for o, c in zip(omega, clients):
        p = np.linalg.matrix_power(np.eye(d) - lr * c.A, steps)
        m += o * p
        v += o * (np.eye(d) - p) @ c.b
    return m, v


def fixed_point(m: np.ndarray, v: np.ndarray, lam: float = 0.0) -> np.ndarray:
    """Fixed point of G ↦ λG + (1−λ)(M G + v), solved exactly: (1−λ)(I − M)G = (1−λ)v (λ < 1)."""
    if not lam < 1.0:
        raise ValueError(f"lam must be < 1 for a unique fixed point, got {lam}")
    d = m.shape[0]
    return np.linalg.solve((1.0 - lam) * (np.eye(d) - m), (1.0 - lam) * v)


def iterate_mixed_fedavg(g0: np.ndarray, m: np.ndarray, v: np.ndarray, lam: float, rounds: int) -> np.ndarray:
    """Trajectory (rounds+1, d) of G ← λG + (1−λ)(M G + v)."""
    traj = [np.asarray(g0, dtype=np.float64)]
    for _ in range(rounds):
        traj.append(mix(traj[-1], m @ traj[-1] + v, lam))
    return np.stack(traj)


# ------------------------------------------------------------------------------------------ E7 / E8
def prox_step(local: np.ndarray, g: np.ndarray, alpha: float, step: float) -> np.ndarray:
    """E7: one gradient step on α‖L − G‖²: L − s·2α(L − G) (equals broadcast mixing with λ = 2sα)."""
    return local - step * 2.0 * alpha * (local - g)


def mix_then_step(local: np.ndarray, g: np.ndarray, lam: float, grad: GradFn, lr: float) -> np.ndarray:
    """Eq. 8: L' = λG + (1−λ)L, then L' − η∇F(L')."""
    lp = mix(g, local, lam)
    return lp - lr * grad(lp)


def joint_step(local: np.ndarray, g: np.ndarray, lam: float, grad: GradFn, lr: float) -> np.ndarray:
    """One gradient step on F(L) + α‖L − G‖² with 2ηα = λ (the Eq. 2 objective)."""
    return local - lr * grad(local) - lam * (local - g)


# ------------------------------------------------------------------------------------------ deviation
def deviation_closed_form(a: np.ndarray, e0: np.ndarray, lr: float, lam: float, steps: int) -> np.ndarray:
    """Exact [λI + (1−λ)(I−ηA)^r − (I−(1−λ)ηA)^r] e0: "r steps at η then mix" minus "r steps at (1−λ)η"."""
    d = a.shape[0]
    eye = np.eye(d)
    mp = np.linalg.matrix_power
    return (lam * eye + (1.0 - lam) * mp(eye - lr * a, steps) - mp(eye - (1.0 - lam) * lr * a, steps)) @ e0


def deviation_leading(a: np.ndarray, e0: np.ndarray, lr: float, lam: float, steps: int) -> np.ndarray:
    """Leading term C(r,2)·η²·λ(1−λ)·A²e0 of the deviation (the whole deviation when r = 2)."""
    return comb(steps, 2) * lr**2 * lam * (1.0 - lam) * (a @ a @ e0)


def deviation_simulated(q: Quadratic, w0: np.ndarray, lr: float, lam: float, steps: int) -> np.ndarray:
    """The deviation by simulation: λw0 + (1−λ)·SGD_r(w0; η) − SGD_r(w0; (1−λ)η)."""
    return mix(w0, local_sgd(w0, q.grad, lr, steps), lam) - local_sgd(w0, q.grad, (1.0 - lam) * lr, steps)


def adam_trajectory(w: np.ndarray, grad: GradFn, lr: float, steps: int) -> np.ndarray:
    """Iterates (steps + 1, d) of torch's Adam (fresh state, float64) from ``w``."""
    p = torch.nn.Parameter(torch.tensor(w, dtype=torch.float64, device=HOST))
    opt = torch.optim.Adam([p], lr=lr)
    out = [p.detach().cpu().numpy().copy()]
    for _ in range(steps):
        p.grad = torch.tensor(grad(p.detach().cpu().numpy()), dtype=torch.float64, device=HOST)
        opt.step()
        out.append(p.detach().cpu().numpy().copy())
    return np.stack(out)


def adam_deviation_curve(w0: np.ndarray, grad: GradFn, lr: float, lam: float, steps_max: int) -> np.ndarray:
    """:func:`adam_deviation` for r = 1..steps_max from one pair of trajectories."""
    a = adam_trajectory(w0, grad, lr, steps_max)
    b = adam_trajectory(w0, grad, (1.0 - lam) * lr, steps_max)
    return np.linalg.norm(mix(np.asarray(w0), a[1:], lam) - b[1:], axis=1)


def adam_deviation(w0: np.ndarray, grad: GradFn, lr: float, lam: float, steps: int) -> float:
    """‖λw0 + (1−λ)·Adam_r(w0; η) − Adam_r(w0; (1−λ)η)‖: the paper's regime (E4 holds only at r = 1)."""
    a = mix(w0, adam_steps(w0, grad, lr, steps), lam)
    b = adam_steps(w0, grad, (1.0 - lam) * lr, steps)
    return float(np.linalg.norm(a - b))


# ------------------------------------------------------------------------------------------ Lemma 1 / Thm 3
def lemma1_sides(h: np.ndarray, x0: np.ndarray, lr: float, sigma2: float, steps: int) -> tuple[float, float]:
    """(LHS, RHS) of Eq. 21 for ℒ(x) = ½ Σ h_i x_i² and SGD with isotropic noise E‖ξ‖² = σ², in exact
    expectation: LHS = E ℒ(x_r); RHS = ℒ(x0) + (L₁η²/2 − η) Σ_{j<r} E‖∇ℒ(x_j)‖² + L₁ r η² σ²/2, L₁ = max h."""
    h = np.asarray(h, dtype=np.float64)
    l1 = float(h.max())
    m = np.asarray(x0, dtype=np.float64) ** 2  # per-coordinate second moments E x_i²
    grad_sq = 0.0
    for _ in range(steps):
        grad_sq += float(np.sum(h**2 * m))
        m = (1.0 - lr * h) ** 2 * m + lr**2 * sigma2 / h.size
    lhs = float(0.5 * np.sum(h * m))
    rhs = float(0.5 * np.sum(h * np.asarray(x0) ** 2) + (l1 * lr**2 / 2.0 - lr) * grad_sq + l1 * steps * lr**2 * sigma2 / 2.0)
    return lhs, rhs


def lemma1_monte_carlo(
    h: np.ndarray, x0: np.ndarray, lr: float, sigma2: float, steps: int, samples: int, seed: int = 0
) -> tuple[float, float]:
    """(LHS, RHS) of Eq. 21 estimated by simulating ``samples`` SGD paths with Gaussian gradient noise."""
    rng = np.random.default_rng(seed)
    h = np.asarray(h, dtype=np.float64)
    l1 = float(h.max())
    x = np.tile(np.asarray(x0, dtype=np.float64), (samples, 1))
    grad_sq = 0.0
    for _ in range(steps):
        g = h * x
        grad_sq += float(np.mean(np.sum(g**2, axis=1)))
        x = x - lr * (g + rng.standard_normal(x.shape) * np.sqrt(sigma2 / h.size))
    lhs = float(np.mean(0.5 * np.sum(h * x**2, axis=1)))
    rhs = float(0.5 * np.sum(h * np.asarray(x0) ** 2) + (l1 * lr**2 / 2.0 - lr) * grad_sq + l1 * steps * lr**2 * sigma2 / 2.0)
    return lhs, rhs


def noise_floor(l1: float, lr: float, sigma2: float) -> float:
    """lim E‖∇ℒ‖² of constant-step SGD on ℒ = (L₁/2)‖x‖²: L₁²η²σ² / (1 − (1 − ηL₁)²) (> 0 when σ > 0)."""
    return l1**2 * lr**2 * sigma2 / (1.0 - (1.0 - lr * l1) ** 2)


def grad_norm_running_average(l1: float, lr: float, sigma2: float, rounds: int, m0: float = 1.0) -> np.ndarray:
    """(1/T) Σ_{t<T} E‖∇ℒ(x_t)‖² for T = 1..rounds on the isotropic quadratic, exact expectation."""
    m, vals = m0, []
    for _ in range(rounds):
        vals.append(l1**2 * m)
        m = (1.0 - lr * l1) ** 2 * m + lr**2 * sigma2
    return np.cumsum(vals) / np.arange(1, rounds + 1)


# ------------------------------------------------------------------------------------------ Figs. 7 and 8
FIG8_FRACTIONS = (0.01, 0.04, 0.1, 0.2, 0.5, 1.0)  # the round fractions t/T of Fig. 8's curves (spec §7)
FIG8_SLOPES = (0.5, 1.0, 2.0)  # the slopes b of Fig. 5's sigmoid variants
FIG7_ALPHAS = (0.1, 0.5, 1.0, 2.0, 5.0, 100.0)  # the α of Fig. 7's Beta(α, α) pdfs (spec §7)
TANGENT = 0.04  # b·t/T at which the simple rule 1 − acc/100 is the sigmoid's tangent at acc = 50 (spec §2.2)
# central-difference step in accuracy points (≈ 1.2e-4; a power of two, so acc ± h is exact); at acc = 50 the error
# is the truncation h²k³/48 (k = b·t/T: 3e-10 at k = 1, 2e-14 at k = 0.04) plus rounding ε/h ≈ 1e-12
SLOPE_STEP = 2.0**-13


def mu_slope(acc: float, t: float, b: float = 1.0) -> float:
    """dμ/dacc of Eq. 6 (:func:`~pflnb.algorithms.pmixfed.mu_sigmoid` at round fraction ``t``, slope ``b``) at ``acc``,
    by a central difference of step :data:`SLOPE_STEP`."""
    h = SLOPE_STEP
    return float((mu_sigmoid(acc + h, t, 1.0, b) - mu_sigmoid(acc - h, t, 1.0, b)) / (2.0 * h))


def mu_curve_facts(
    fractions: Sequence[float] = FIG8_FRACTIONS, slopes: Sequence[float] = FIG8_SLOPES, points: int = 401
) -> dict[str, object]:
    """Fig. 8 in float64: over every curve μ(acc) of Eq. 6 (t/T in ``fractions`` × b in ``slopes``, acc on ``points``
    values of [0, 100]) the largest |μ(50) − ½| (``mid_residual``) and the largest increase of μ from one acc value to
    the next (``max_rise``); −dμ/dacc at acc = 50 for each t/T at b = 1 (``slopes_at_50``, t/T ascending); for
    b·t/T = :data:`TANGENT` (each b) the largest gap to the simple rule 1 − acc/100 at acc = 50 in value and slope
    (``tangent_residual``), and at b = 1 the smallest slope gap at the other t/T (``other_slope_gap``)."""
    acc = np.linspace(0.0, 100.0, points)
    curves = [(float(f), float(b)) for f in fractions for b in slopes]
    mid = max(abs(mu_sigmoid(50.0, f, 1.0, b) - 0.5) for f, b in curves)
    rise = max(float(np.diff(mu_sigmoid(acc, f, 1.0, b)).max()) for f, b in curves)
    ordered = sorted(float(f) for f in fractions)
    h = SLOPE_STEP
    simple_slope = float((mu_simple(50.0 + h) - mu_simple(50.0 - h)) / (2.0 * h))
    tangent = max(
        max(abs(mu_sigmoid(50.0, TANGENT / b, 1.0, b) - mu_simple(50.0)), abs(mu_slope(50.0, TANGENT / b, b) - simple_slope))
        for b in slopes
    )
    others = [abs(mu_slope(50.0, f) - simple_slope) for f in ordered if not np.isclose(f, TANGENT)]
    return {
        "fractions": ordered,
        "slopes": [float(b) for b in slopes],
        "mid_residual": float(mid),
        "max_rise": rise,
        "slopes_at_50": [-mu_slope(50.0, f) for f in ordered],
        "tangent_residual": float(tangent),
        "other_slope_gap": float(min(others)) if others else float("nan"),
    }


def beta_shape_facts(alphas: Sequence[float] = FIG7_ALPHAS, points: int = 500) -> pd.DataFrame:
    """Fig. 7 in float64: per α, the Beta(α, α) log-pdf on ``points`` values of [0.001, ½] and on their mirror images
    in [½, 0.999]: the smallest and largest step from one value to the next on each half (``left_min``, ``left_max``,
    ``right_min``, ``right_max``), the largest |pdf − 1| (``max_pdf_gap``), and the exact masses P(λ < 0.1 or
    λ > 0.9) (``end_mass``) and P(0.4 < λ < 0.6) (``centre_mass``), both 0.2 under the uniform."""
    left = np.linspace(0.001, 0.5, points)
    right = np.sort(1.0 - left)
    rows = []
    for a in alphas:
        dl, dr = np.diff(stats.beta.logpdf(left, a, a)), np.diff(stats.beta.logpdf(right, a, a))
        pdf = stats.beta.pdf(np.concatenate([left, right]), a, a)
        rows.append(
            {
                "alpha": float(a),
                "left_min": float(dl.min()),
                "left_max": float(dl.max()),
                "right_min": float(dr.min()),
                "right_max": float(dr.max()),
                "max_pdf_gap": float(np.abs(pdf - 1.0).max()),
                "end_mass": float(stats.beta.cdf(0.1, a, a) + stats.beta.sf(0.9, a, a)),
                "centre_mass": float(stats.beta.cdf(0.6, a, a) - stats.beta.cdf(0.4, a, a)),
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "FIG7_ALPHAS",
    "FIG8_FRACTIONS",
    "FIG8_SLOPES",
    "TANGENT",
    "Quadratic",
    "beta_shape_facts",
    "mu_curve_facts",
    "mu_slope",
    "adam_deviation",
    "adam_deviation_curve",
    "adam_first_step",
    "adam_steps",
    "adam_trajectory",
    "deviation_closed_form",
    "deviation_leading",
    "deviation_simulated",
    "e1_residuals",
    "ema_closed_form",
    "ema_rounds",
    "fedavg_affine_map",
    "fedavg_server_lr",
    "fedsgd_step",
    "fixed_point",
    "grad_norm_running_average",
    "iterate_mixed_fedavg",
    "joint_step",
    "lemma1_monte_carlo",
    "lemma1_sides",
    "local_sgd",
    "logistic_loss_grad",
    "mix",
    "mix_then_step",
    "mixed_round",
    "noise_floor",
    "prox_step",
    "quadratic_clients",
]
