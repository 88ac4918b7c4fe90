"""Fed-CO2's NTK analysis (paper §4, App. C; spec §3): a two-layer ReLU net with per-client normalization.

Model (Eqs. 8–9): F(x) = (1/√m) Σ_k c_k σ(γ_{k,i} v_kᵀx / ‖v_k‖_{S_i}) for x of client i, with c fixed, v the
first-layer directions and γ per-client scales. The **online** model (FedBN) shares v and c across
clients, the **offline** model (SingleSet) has its own v, c per client; Fed-CO2 is ½(F_on + F_off) (Eq. 10).
``fedavg`` shares v, c and γ and normalizes with the pooled covariance (shown for reference only; the
paper's V-dominated argument does not separate it from FedBN).

Provides the Monte-Carlo infinite-width Gram matrices V_on^∞, V_off^∞ (Def. 4.2 with the inner products
and ReLU indicators of the source definition), the finite-width kernels K_V = J_v J_vᵀ, K_G = J_γ J_γᵀ at
any parameters, full-batch gradient descent on the MSE of Eq. 12 for the variants ``on``, ``off``,
``co2`` (true gradient of ½(F_on + F_off)) and ``co2x2`` (each sub-model moved by the residual of F
without the chain-rule ½, the paper's Eq. 19 convention), and the toy data sets A and B of spec §3.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

VARIANTS = ("on", "off", "co2", "co2x2")


@dataclass
class ToyData:
    """Inputs X (n, d), client ids cid (n,), client covariances S (N, d, d), targets y (n,)."""

    X: np.ndarray
    cid: np.ndarray
    S: np.ndarray
    y: np.ndarray

    @property
    def num_clients(self) -> int:
        """Number of clients N."""
        return int(self.S.shape[0])

    def mask(self) -> np.ndarray:
        """The same-client mask 1{i_p = i_q} (n, n)."""
        return (self.cid[:, None] == self.cid[None, :]).astype(float)


def toy_data_a(seed: int = 0, n_clients: int = 3, m_per: int = 8, d: int = 6) -> ToyData:
    """Data A ('generic feature skew'): x ~ N(0, S_i), S_i = A_i A_iᵀ, A_i = I + 0.6 G_i; y = sign(w·x)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    X, cid, S = [], [], []
    for i in range(n_clients):
        A = np.eye(d) + 0.6 * rng.standard_normal((d, d))
        S.append(A @ A.T)
        X.append(rng.standard_normal((m_per, d)) @ A.T)
        cid += [i] * m_per
    X = np.concatenate(X)
    return ToyData(X, np.array(cid), np.stack(S), np.sign(X @ w))


def toy_data_b(seed: int = 0, m_per: int = 8, d: int = 6, scales: tuple[float, ...] = (1.0, 2.0, 0.5)) -> ToyData:
    """Data B ('severe feature skew'): client i = s_i·(B0 + 0.05·noise), S_i = s_i² I, y ~ Unif{±1}."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((m_per, d))
    X, cid, S = [], [], []
    for i, s in enumerate(scales):
        X.append(s * (base + 0.05 * rng.standard_normal((m_per, d))))
        S.append(s**2 * np.eye(d))
        cid += [i] * m_per
    n = m_per * len(scales)
    return ToyData(np.concatenate(X), np.array(cid), np.stack(S), rng.choice([-1.0, 1.0], size=n))


def gram_infinite(X: np.ndarray, alpha: float = 0.5, n_mc: int = 100_000, seed: int = 0, batch: int = 20_000) -> np.ndarray:
    """Monte-Carlo V_on^∞ (Eq. 14): α²·E_u[⟨x_p^{u⊥}, x_q^{u⊥}⟩ 1{uᵀx_p ≥ 0} 1{uᵀx_q ≥ 0}], u uniform on the sphere."""
    rng = np.random.default_rng(seed)
    n, d = X.shape
    gram = X @ X.T
    acc_a = np.zeros((n, n))
    acc_w = np.zeros((n, n))
    done = 0
    while done < n_mc:
        b = min(batch, n_mc - done)
        U = rng.standard_normal((b, d))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        Z = U @ X.T  # (b, n): u·x_p
        A = (Z >= 0).astype(float)
        W = Z * A
        acc_a += A.T @ A
        acc_w += W.T @ W
        done += b
    # ⟨x_p − (u·x_p)u, x_q − (u·x_q)u⟩ = x_p·x_q − (u·x_p)(u·x_q) for unit u
    return alpha**2 * (gram * acc_a - acc_w) / n_mc


def spectrum(K: np.ndarray) -> dict[str, float]:
    """Smallest and largest eigenvalue and inverse condition number κ⁻¹ = λ_min/λ_max of a symmetric K."""
    ev = np.linalg.eigvalsh(0.5 * (K + K.T))
    return {"lambda_min": float(ev[0]), "lambda_max": float(ev[-1]), "inv_cond": float(ev[0] / ev[-1])}


def cooperative_kernels(V_on: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The kernels Theorem 4.3 compares: on (FedBN), off = on ∘ mask (SingleSet, Eq. 15), ½ and ¼ averages."""
    V_off = V_on * mask
    return {"on": V_on, "off": V_off, "co2 (½, paper)": 0.5 * (V_on + V_off), "co2 (¼, chain rule)": 0.25 * (V_on + V_off)}


# ---- finite-width network -------------------------------------------------------------------------------


@dataclass
class TwoLayerParams:
    """Parameters of one model: v (m, d) shared or (N, m, d) personal, γ (m, N), c (m,) or (N, m) fixed."""

    V: np.ndarray
    gamma: np.ndarray
    c: np.ndarray
    personal: bool

    def copy(self) -> TwoLayerParams:
        """A deep copy."""
        return TwoLayerParams(self.V.copy(), self.gamma.copy(), self.c.copy(), self.personal)


def init_params(data: ToyData, m: int, alpha: float, seed: int = 0) -> tuple[TwoLayerParams, TwoLayerParams]:
    """Online and offline parameters from one init (Eq. 11): v ~ N(0, α² I), c ~ ±1, γ = ‖v(0)‖₂/α."""
    rng = np.random.default_rng(seed)
    d, N = data.X.shape[1], data.num_clients
    V = alpha * rng.standard_normal((m, d))
    c = rng.choice([-1.0, 1.0], size=m)
    gamma = np.repeat((np.linalg.norm(V, axis=1) / alpha)[:, None], N, axis=1)
    on = TwoLayerParams(V.copy(), gamma.copy(), c.copy(), False)
    off = TwoLayerParams(np.repeat(V[None], N, 0), gamma.copy(), np.repeat(c[None], N, 0), True)
    return on, off


def forward_and_jacobians(p: TwoLayerParams, data: ToyData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outputs F (n,), J_v (n, #v) and J_γ (n, m·N) of Eqs. 8–9 (analytic derivatives, c fixed)."""
    X, S, cid = data.X, data.S, data.cid
    n = X.shape[0]
    N = data.num_clients
    m = p.gamma.shape[0]
    rows = np.arange(n)
    Vc = p.V if p.personal else np.broadcast_to(p.V, (N, *p.V.shape))  # per-client directions (N, m, d)
    VS_c = np.matmul(Vc, S)  # v_kᵀ S_i (N, m, d)
    nS = np.sqrt((VS_c * Vc).sum(-1))[cid]  # ‖v_k‖_{S_i} per sample (n, m)
    VS = VS_c[cid]
    if p.personal:
        cp = p.c[cid]
        z = np.matmul(p.V[cid], X[:, :, None])[..., 0]
    else:
        cp = np.broadcast_to(p.c, (n, m))
        z = X @ p.V.T
    u = z / nS
    gam = p.gamma[:, cid].T  # (n, m)
    h = gam * u
    a = (h > 0).astype(float)
    out = np.einsum("nk,nk->n", np.maximum(h, 0), cp) / np.sqrt(m)
    Jg = np.zeros((n, m, N))
    Jg[rows, :, cid] = cp * a * u / np.sqrt(m)
    du = X[:, None, :] / nS[:, :, None] - (z / nS**3)[:, :, None] * VS  # ∂u/∂v_k (n, m, d)
    g = (cp * gam * a)[:, :, None] * du / np.sqrt(m)
    if p.personal:
        Jv = np.zeros((n, *p.V.shape))
        Jv[rows, cid] = g
    else:
        Jv = g
    return out, Jv.reshape(n, -1), Jg.reshape(n, -1)


def empirical_kernels(p: TwoLayerParams, data: ToyData) -> dict[str, np.ndarray]:
    """Finite-width kernels K_V = J_v J_vᵀ and K_G = J_γ J_γᵀ of one model, and its outputs F."""
    F, Jv, Jg = forward_and_jacobians(p, data)
    return {"F": F, "K_V": Jv @ Jv.T, "K_G": Jg @ Jg.T}


def _apply(p: TwoLayerParams, grad_v: np.ndarray, grad_g: np.ndarray, lr: float) -> None:
    p.V -= lr * grad_v.reshape(p.V.shape)
    p.gamma -= lr * grad_g.reshape(p.gamma.shape)


def gd_losses(
    data: ToyData, variant: str, m: int = 512, alpha: float = 0.5, steps: int = 600, lr: float | None = None, seed: int = 0
) -> dict[str, np.ndarray | float]:
    """Full-batch GD on L = mean (F − y)² (Eq. 12) for ``on``, ``off``, ``co2`` or ``co2x2``; the loss per step.

    Default step η = 0.5·n / (2 λ_max(K_V^on/α² + K_G^on)) at t = 0 (spec §3.5 T3), the same for all variants.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    lr = default_lr(data, m, alpha, seed) if lr is None else lr
    on, off = init_params(data, m, alpha, seed)
    n = data.X.shape[0]
    losses = np.zeros(steps + 1)
    for t in range(steps + 1):
        if variant in ("on", "off"):
            p = on if variant == "on" else off
            F, Jv, Jg = forward_and_jacobians(p, data)
            r = F - data.y
            losses[t] = float(np.mean(r**2))
            if t < steps:
                _apply(p, 2 / n * Jv.T @ r, 2 / n * Jg.T @ r, lr)
        else:
            F1, Jv1, Jg1 = forward_and_jacobians(on, data)
            F2, Jv2, Jg2 = forward_and_jacobians(off, data)
            r = 0.5 * (F1 + F2) - data.y
            losses[t] = float(np.mean(r**2))
            if t < steps:
                f = 0.5 if variant == "co2" else 1.0
                _apply(on, f * 2 / n * Jv1.T @ r, f * 2 / n * Jg1.T @ r, lr)
                _apply(off, f * 2 / n * Jv2.T @ r, f * 2 / n * Jg2.T @ r, lr)
    return {"loss": losses, "lr": float(lr)}


def default_lr(data: ToyData, m: int = 512, alpha: float = 0.5, seed: int = 0) -> float:
    """The GD step of :func:`gd_losses`: η = 0.5·n / (2 λ_max(K_V^on/α² + K_G^on)) at t = 0."""
    on, _ = init_params(data, m, alpha, seed)
    k = empirical_kernels(on, data)
    return float(0.5 * data.X.shape[0] / (2 * np.linalg.eigvalsh(k["K_V"] / alpha**2 + k["K_G"])[-1]))


def gd_kernel(data: ToyData, variant: str, m: int = 512, alpha: float = 0.5, seed: int = 0) -> np.ndarray:
    """The t = 0 kernel of the GD step of ``variant`` on F (K = J_v J_vᵀ + J_γ J_γᵀ): K_on, K_off,
    ¼(K_on + K_off) for ``co2`` (chain rule) and ½(K_on + K_off) for ``co2x2`` (the paper's Eq. 19)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    on, off = init_params(data, m, alpha, seed)
    k_on, k_off = (sum(empirical_kernels(p, data)[k] for k in ("K_V", "K_G")) for p in (on, off))
    return {"on": k_on, "off": k_off, "co2": 0.25 * (k_on + k_off), "co2x2": 0.5 * (k_on + k_off)}[variant]


def rate_bound(
    data: ToyData, variant: str, m: int = 512, alpha: float = 0.5, steps: int = 600, lr: float | None = None, seed: int = 0
) -> np.ndarray:
    """Check T4: the linear-rate bound L(0)·(1 − η_eff μ)^{2t} of the linearized GD of ``variant``, with
    μ = λ_min of its t = 0 kernel (:func:`gd_kernel`) and η_eff = 2η/n (L is the mean squared residual).

    Exact for the linearized dynamics r(t+1) = (I − η_eff K) r(t) while η_eff λ_max(K) ≤ 1; the network's
    kernel drifts, so it is an illustration at finite width, not a guarantee.
    """
    lr = default_lr(data, m, alpha, seed) if lr is None else lr
    K = gd_kernel(data, variant, m, alpha, seed)
    on, off = init_params(data, m, alpha, seed)
    F0 = {"on": lambda: forward_and_jacobians(on, data)[0], "off": lambda: forward_and_jacobians(off, data)[0]}
    F = F0[variant]() if variant in ("on", "off") else 0.5 * (F0["on"]() + F0["off"]())
    L0 = float(np.mean((F - data.y) ** 2))
    eig = np.linalg.eigvalsh(K)
    eta = 2 * lr / data.X.shape[0]
    if eta * eig[-1] > 1:
        raise ValueError(f"step too large for the bound: η_eff λ_max = {eta * eig[-1]:.3g} > 1")
    return L0 * (1 - eta * max(eig[0], 0.0)) ** (2 * np.arange(steps + 1))


def late_slope(loss: np.ndarray) -> float:
    """Least-squares slope of log L(t) over the second half of training (late linear rate)."""
    t = np.arange(loss.size)
    half = loss.size // 2
    return float(np.polyfit(t[half:], np.log(loss[half:]), 1)[0])


# ---- the notebook's theory experiments (spec §3.5 T1–T4) as tables ------------------------------------------

TOY_DATA = {"A": toy_data_a, "B": toy_data_b}


def spectra_table(n_mc: int, alpha: float = 0.5, seed: int = 0) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """T1: spectrum (λ_min, λ_max, κ⁻¹) of every kernel of :func:`cooperative_kernels` on toy data A and B
    (seed ``seed``), and the Monte-Carlo V_on^∞ of each."""
    rows, V_inf = [], {}
    for name, make in TOY_DATA.items():
        d = make(seed)
        V_inf[name] = gram_infinite(d.X, alpha=alpha, n_mc=n_mc, seed=seed)
        for kernel, K in cooperative_kernels(V_inf[name], d.mask()).items():
            rows.append({"data": name, "kernel": kernel, **spectrum(K)})
    return pd.DataFrame(rows), V_inf


def theorem43_checks(spectra: pd.DataFrame, rtol: float = 1e-10) -> pd.DataFrame:
    """Per data set, Theorem 4.3's exact linear-algebra facts on :func:`spectra_table` (tolerance ``rtol``·λ_max(V_on)):
    V_on PSD, interlacing at both ends (μ_off ≥ μ_on, λ_max(off) ≤ λ_max(on)), Weyl (λ_min(½(V_on+V_off)) ≥
    ½(μ_on+μ_off) ≥ μ_on), the κ⁻¹ ordering, and whether the chain-rule kernel ¼(V_on+V_off) has λ_min ≥ μ_on."""
    rows = []
    for name, g in spectra.groupby("data", sort=False):
        s = g.set_index("kernel")
        on, off, half, quarter = (s.loc[k] for k in ("on", "off", "co2 (½, paper)", "co2 (¼, chain rule)"))
        tol = rtol * on.lambda_max
        rows.append(
            {
                "data": name,
                "mu_on": on.lambda_min,
                "mu_off": off.lambda_min,
                "mu_half": half.lambda_min,
                "mu_quarter": quarter.lambda_min,
                "psd": bool(on.lambda_min > -tol),
                "interlacing": bool(off.lambda_min >= on.lambda_min - tol and off.lambda_max <= on.lambda_max + tol),
                "weyl": bool(half.lambda_min >= 0.5 * (on.lambda_min + off.lambda_min) - tol >= on.lambda_min - 2 * tol),
                "inv_cond_order": bool(off.inv_cond >= on.inv_cond - rtol and half.inv_cond >= on.inv_cond - rtol),
                "half_beats_on": bool(half.lambda_min >= on.lambda_min - tol),
                "quarter_beats_on": bool(quarter.lambda_min >= on.lambda_min - tol),
            }
        )
    return pd.DataFrame(rows)


def finite_width_table(widths: tuple[int, ...] | list[int], inits: int, alpha: float = 0.5) -> pd.DataFrame:
    """T2: spectra of the empirical t = 0 kernels K_V (on, off, ½(on+off)) and K_G on data A and B for every width
    and init seed; raises AssertionError if an exact fact at t = 0 fails (same function, K_V^off = block diagonal
    of K_V^on, equal γ-kernels, λ_min ordering)."""
    rows = []
    for name, make in TOY_DATA.items():
        d = make(0)
        for m in widths:
            for s in range(inits):
                on, off = init_params(d, m, alpha, seed=s)
                kon, koff = empirical_kernels(on, d), empirical_kernels(off, d)
                if not np.allclose(kon["F"], koff["F"], atol=1e-12):
                    raise AssertionError(f"data {name}, width {m}, seed {s}: same init must give the same function")
                if not np.allclose(koff["K_V"], kon["K_V"] * d.mask(), atol=1e-10):
                    raise AssertionError(f"data {name}, width {m}, seed {s}: K_V^off is not the block diagonal of K_V^on")
                if not np.allclose(kon["K_G"], koff["K_G"], atol=1e-12):
                    raise AssertionError(f"data {name}, width {m}, seed {s}: the γ-kernels differ at t = 0")
                kernels = {"on": kon["K_V"], "off": koff["K_V"], "co2 (½, paper)": 0.5 * (kon["K_V"] + koff["K_V"])}
                spec = {k: spectrum(K) for k, K in kernels.items()}
                tol = 1e-9 * spec["on"]["lambda_max"]
                if not min(spec["off"]["lambda_min"], spec["co2 (½, paper)"]["lambda_min"]) >= spec["on"]["lambda_min"] - tol:
                    raise AssertionError(f"data {name}, width {m}, seed {s}: λ_min ordering of the K_V kernels fails")
                rows += [{"data": name, "width": m, "seed": s, "kernel": k, **v} for k, v in spec.items()]
                rows.append({"data": name, "width": m, "seed": s, "kernel": "G (γ-part)", **spectrum(kon["K_G"])})
    return pd.DataFrame(rows)


def gd_tables(width: int, steps: int, seeds_b: int, alpha: float = 0.5, every: int = 5) -> dict[str, pd.DataFrame]:
    """T3/T4: GD loss curves of every variant (data A at seed 0, data B at ``seeds_b`` seeds; every ``every``-th
    step), final losses and late slopes (``finals``), and the t = 0 rate bounds at seed 0 (``bounds``)."""
    curves, finals, bounds = [], [], []
    for name, n_seeds in (("A", 1), ("B", seeds_b)):
        for s in range(n_seeds):
            d = TOY_DATA[name](s)
            for v in VARIANTS:
                r = gd_losses(d, v, m=width, alpha=alpha, steps=steps, seed=s)
                L = r["loss"]
                finals.append(
                    {"data": name, "seed": s, "variant": v, "final_loss": L[-1], "late_slope": late_slope(L), "lr": r["lr"]}
                )
                curves += [{"data": name, "seed": s, "variant": v, "step": t, "loss": L[t]} for t in range(0, L.size, every)]
                if s == 0:
                    b = rate_bound(d, v, m=width, alpha=alpha, steps=steps, seed=0)
                    bounds += [{"data": name, "variant": v, "step": t, "bound": b[t]} for t in range(0, b.size, every)]
    return {"curves": pd.DataFrame(curves), "finals": pd.DataFrame(finals), "bounds": pd.DataFrame(bounds)}


def gd_ordering(finals: pd.DataFrame, data: str = "B") -> pd.DataFrame:
    """Per seed of ``data``: whether T3's expected ordering holds (spec §3.5: L(co2x2) < L(on)/3, L(co2) < L(on)/2,
    L(off) < L(on)/10 and a steeper late log-slope for co2x2 than for on), with the final losses."""
    rows = []
    for s, g in finals[finals.data == data].groupby("seed"):
        L, sl = g.set_index("variant").final_loss, g.set_index("variant").late_slope
        ok = L["co2x2"] < L["on"] / 3 and L["co2"] < L["on"] / 2 and L["off"] < L["on"] / 10 and sl["co2x2"] < sl["on"]
        rows.append({"seed": int(s), **{f"L_{v}": float(L[v]) for v in VARIANTS}, "holds": bool(ok)})
    return pd.DataFrame(rows)
