"""Neural-tangent-kernel tools for LG-Mix's theory (Sec. 3–4 and App. B of Jiang et al., ICLR 2024).

Two-layer ReLU network of Du et al. (2019): f(W, x) = (1/√m) Σ_r a_r relu(w_rᵀx), a_r ∈ {±1} fixed, only W
trained on L = ½ Σ_i (f(x_i) − y_i)². Its Gram matrix H(t)_ij = (1/m) Σ_r x_iᵀx_j 1{w_rᵀx_i ≥ 0, w_rᵀx_j ≥ 0}
is the empirical NTK J Jᵀ with respect to W; H^∞ is its infinite-width limit. The last-layer kernel
Ĥ_ij = (1/m) Σ_r h_r(x_i) h_r(x_j) (h = relu(Wx)) has trace tr(Σ)/m with Σ = Σ_i h_i h_iᵀ (Eq. 5).

For any torch model: the full empirical NTK through ``torch.func`` (Jacobian, small models) and its trace
without a Jacobian for models made of dense layers. Plus kernel alignment, spectra, Proposition 1's rates
and a simulation of LG-Mix on the two-layer network with Theorem 1's bound and Lemma 4's linear model.

Arrays are float64 numpy unless a function says torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

# ---- data and the two-layer network ------------------------------------------------------------------


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit Euclidean norm."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered_clients(n_clients: int, n_per_client: int, d: int, spread: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Unit-norm inputs x = normalize(μ_c + spread·z/√d), μ_c a random unit vector per client (feature shift)."""
    out = []
    for _ in range(n_clients):
        mu = unit_rows(rng.standard_normal((1, d)))
        out.append(unit_rows(mu + spread * rng.standard_normal((n_per_client, d)) / np.sqrt(d)))
    return out


def two_layer_init(d: int, m: int, rng: np.random.Generator, antisymmetric: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """W (m × d) with w_r ~ N(0, I_d) and a ∈ {±1}^m; antisymmetric: rows duplicated with a negated, so f(W0, ·) ≡ 0."""
    if antisymmetric:
        if m % 2:
            raise ValueError(f"antisymmetric init needs an even width m, got {m}")
        w = rng.standard_normal((m // 2, d))
        a = rng.choice([-1.0, 1.0], size=m // 2)
        return np.concatenate([w, w]), np.concatenate([a, -a])
    return rng.standard_normal((m, d)), rng.choice([-1.0, 1.0], size=m)


def two_layer_forward(w: np.ndarray, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """f(W, x_i) = (1/√m) Σ_r a_r relu(w_rᵀx_i) for each row x_i."""
    return np.maximum(x @ w.T, 0.0) @ a / np.sqrt(len(a))


def two_layer_grad(w: np.ndarray, a: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∇_W of L = ½ Σ_i (f(W, x_i) − y_i)²: row r is (1/√m) a_r Σ_i (f_i − y_i) 1{w_rᵀx_i ≥ 0} x_i."""
    r = two_layer_forward(w, a, x) - y
    act = (x @ w.T >= 0).astype(float)  # n × m
    return (act * r[:, None]).T @ x * (a[:, None] / np.sqrt(len(a)))


def two_layer_jacobian(w: np.ndarray, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """J (n × m·d), J_i = ∂f(x_i)/∂W flattened row-major: ∂f(x_i)/∂w_r = (1/√m) a_r x_i 1{w_rᵀx_i ≥ 0}."""
    act = (x @ w.T >= 0).astype(float)  # n × m
    jac = (act * a / np.sqrt(len(a)))[:, :, None] * x[:, None, :]
    return jac.reshape(len(x), -1)


def relu_gram(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """H_ij = (1/m) Σ_r x_iᵀx_j 1{w_rᵀx_i ≥ 0, w_rᵀx_j ≥ 0} (Sec. 3.2)."""
    act = (x @ w.T >= 0).astype(float)
    return (x @ x.T) * (act @ act.T) / w.shape[0]


def feature_gram(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Ĥ_ij = (1/m) Σ_r h_r(x_i) h_r(x_j), h = relu(Wx): the NTK w.r.t. the output weights a."""
    h = np.maximum(x @ w.T, 0.0)
    return h @ h.T / w.shape[0]


def _angles(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = np.clip(x @ x.T, -1.0, 1.0)
    return g, np.arccos(g)


def h_inf(x: np.ndarray) -> np.ndarray:
    """H^∞_ij = x_iᵀx_j (π − θ_ij) / (2π) for unit-norm rows (θ_ij = arccos x_iᵀx_j)."""
    g, th = _angles(x)
    return g * (np.pi - th) / (2 * np.pi)


def h_hat_inf(x: np.ndarray) -> np.ndarray:
    """Ĥ^∞_ij = (sin θ_ij + (π − θ_ij) cos θ_ij) / (2π), the order-1 arc-cosine kernel (unit-norm rows)."""
    g, th = _angles(x)
    return (np.sin(th) + (np.pi - th) * g) / (2 * np.pi)


def feature_trace_np(h: np.ndarray) -> float:
    """tr(Σ) = Σ_i ‖h_i‖² for features h (n × m) (Eq. 5 without forming Σ or Ĥ)."""
    return float(np.einsum("ij,ij->", h, h))


# ---- Proposition 1 -------------------------------------------------------------------------------------


def prop1_linear_rate(eigs: np.ndarray, eta: float) -> float:
    """Proposition 1: 1 − 2η tr(H)/n (eigs: the n eigenvalues of H)."""
    return float(1.0 - 2.0 * eta * np.sum(eigs) / len(eigs))


def prop1_exact_rate(eigs: np.ndarray, eta: float) -> float:
    """E‖(I − ηH)ξ‖² / ‖ξ‖² for isotropic ξ: (1/n) Σ_i (1 − ηs_i)²."""
    return float(np.mean((1.0 - eta * np.asarray(eigs)) ** 2))


def one_step_ratio(
    x: np.ndarray, y: np.ndarray, m: int, eta: float, rng: np.random.Generator, antisymmetric: bool = True, steps: int = 1
) -> tuple[float, np.ndarray]:
    """‖y − y(steps)‖² / ‖y − y(0)‖² after full-batch GD on W from a fresh init, and eig(H(0))."""
    w, a = two_layer_init(x.shape[1], m, rng, antisymmetric)
    e0 = y - two_layer_forward(w, a, x)
    eigs = np.linalg.eigvalsh(relu_gram(w, x))
    for _ in range(steps):
        w = w - eta * two_layer_grad(w, a, x, y)
    e1 = y - two_layer_forward(w, a, x)
    return float(e1 @ e1 / (e0 @ e0)), eigs


# ---- kernels of any torch model ------------------------------------------------------------------------


def _jacobian_parts(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-sample Jacobian of the outputs w.r.t. each parameter, name → (n, k, *shape); model in eval mode."""
    model.eval()
    params = {n: p.detach() for n, p in model.named_parameters()}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def f(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
        return functional_call(model, (p, buffers), (xi.unsqueeze(0),)).squeeze(0)

    return vmap(jacrev(f), in_dims=(None, 0))(params, x)


def jacobian(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Per-sample Jacobian of the outputs w.r.t. all parameters, shape (n, k, P); model in eval mode."""
    jac = _jacobian_parts(model, x)
    n = x.shape[0]
    return torch.cat([j.reshape(n, j.shape[1], -1) for j in jac.values()], dim=2)


def empirical_ntk(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Θ(x_i, x_j)_{kl} = ⟨∇_θ f_k(x_i), ∇_θ f_l(x_j)⟩, shape (n, k, n, k), from the full Jacobian."""
    j = jacobian(model, x)
    return torch.einsum("ikp,jlp->ikjl", j, j)


def ntk_trace(model: nn.Module, x: torch.Tensor, chunk: int | None = None) -> float:
    """tr Θ = Σ_i Σ_k ‖∇_θ f_k(x_i)‖² from the full Jacobian, each parameter's block summed without joining them;
    ``chunk``: samples a Jacobian holds at once (chunk·k·P numbers, 0.6 GB a sample for the 14 M-parameter DigitModel,
    and one buffer for a block's squares), default all of ``x``."""
    if chunk is not None and chunk < 1:
        raise ValueError(f"chunk must be a positive sample count, got {chunk}")
    step = max(len(x), 1) if chunk is None else chunk
    total, buf = 0.0, torch.empty(0)
    for i in range(0, len(x), step):
        for j in _jacobian_parts(model, x[i : i + step]).values():
            if buf.numel() < j.numel() or buf.dtype != j.dtype or buf.device != j.device:
                buf = torch.empty(j.numel(), dtype=j.dtype, device=j.device)  # the squares' buffer, reused
            # a cascaded sum: vector_norm and dot accumulate float32 in order, 0.3-0.6 % off on the DigitModel
            total += float(torch.mul(j, j, out=buf[: j.numel()].view_as(j)).sum())
    return total


def dense_ntk_trace(model: nn.Module, x: torch.Tensor) -> float:
    """tr Θ = Σ_i Σ_k ‖∇_θ f_k(x_i)‖² without a Jacobian, for models whose parameters all sit in nn.Linear
    layers applied once to 2-D inputs: ‖∇_W f_k(x_i)‖² = ‖a_in,i‖² ‖δ_k,i‖² and ‖∇_b f_k(x_i)‖² = ‖δ_k,i‖²,
    δ_k,i = ∂f_k(x_i)/∂(layer output); one backward pass per output k. Model in eval mode."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    n_lin = sum(p.numel() for m in linears for p in m.parameters())
    if n_lin != sum(p.numel() for p in model.parameters()):
        raise ValueError("dense_ntk_trace needs every parameter inside nn.Linear layers; use ntk_trace")
    saved: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]] = {}

    def hook(mod: nn.Module, inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        saved[mod] = (inp[0].detach(), out)

    handles = [m.register_forward_hook(hook) for m in linears]
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            out = model(x)
            outs = [saved[m][1] for m in linears]
            if any(o.dim() != 2 for o in outs):
                raise ValueError("dense_ntk_trace needs 2-D (batch × features) layer inputs")
            a2 = [saved[m][0].double().pow(2).sum(1) for m in linears]
            total = torch.zeros((), dtype=torch.float64, device=out.device)
            for k in range(out.shape[1]):
                grads = torch.autograd.grad(out[:, k].sum(), outs, retain_graph=k < out.shape[1] - 1)
                for m, g, a in zip(linears, grads, a2):
                    d2 = g.double().pow(2).sum(1)
                    total += (a * d2).sum() + (d2.sum() if m.bias is not None else 0.0)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return float(total)


def kernel_alignment(k1: np.ndarray, k2: np.ndarray, centered: bool = False) -> float:
    """A(K1, K2) = ⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F); ``centered`` applies H K H with H = I − 11ᵀ/n first."""
    k1, k2 = np.asarray(k1, float), np.asarray(k2, float)
    if centered:
        n = k1.shape[0]
        c = np.eye(n) - 1.0 / n
        k1, k2 = c @ k1 @ c, c @ k2 @ c
    return float(np.sum(k1 * k2) / (np.linalg.norm(k1) * np.linalg.norm(k2)))


def spectrum(k: np.ndarray) -> np.ndarray:
    """Eigenvalues of a symmetric kernel matrix, descending."""
    return np.linalg.eigvalsh((k + k.T) / 2)[::-1]


def block_diagonal(k: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """H̃: the block-diagonal part of K with blocks of the given sizes (the clients' principal blocks)."""
    out = np.zeros_like(k)
    start = 0
    for s in sizes:
        out[start : start + s, start : start + s] = k[start : start + s, start : start + s]
        start += s
    return out


# ---- Theorem 1 / 2: LG-Mix on the two-layer network ----------------------------------------------------


@dataclass
class FedSimResult:
    """Per-round squared errors of the federated two-layer simulation (rounds + 1 entries each)."""

    err: np.ndarray  # ‖y − y(t)‖², each client's own model on its own data
    err_clients: np.ndarray  # (rounds + 1) × N: ‖y_c − y_c(t)‖²
    residuals: np.ndarray  # (rounds + 1) × n: y − y(t), clients stacked


def federated_two_layer(
    xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    m: int,
    lam: float | Sequence[float],
    rounds: int,
    local_steps: int,
    eta_l: float,
    eta_g: float,
    rng: np.random.Generator,
) -> FedSimResult:
    """LG-Mix on the two-layer net: K full-batch GD steps per client from w_c, Δu = (η_g/N) Σ Δw_c,
    w_c ← w_c + λ_c Δw_c + (1 − λ_c) Δu (App. B.1.2); antisymmetric init shared by all clients."""
    n_clients = len(xs)
    lams = np.broadcast_to(np.asarray(lam, float), (n_clients,))
    w0, a = two_layer_init(xs[0].shape[1], m, rng, antisymmetric=True)
    ws = [w0.copy() for _ in range(n_clients)]

    def residuals() -> list[np.ndarray]:
        return [y - two_layer_forward(w, a, x) for w, x, y in zip(ws, xs, ys)]

    res = [np.concatenate(residuals())]
    for _ in range(rounds):
        deltas = []
        for w, x, y in zip(ws, xs, ys):
            v = w.copy()
            for _ in range(local_steps):
                v -= eta_l * two_layer_grad(v, a, x, y)
            deltas.append(v - w)
        du = eta_g / n_clients * sum(deltas)
        ws = [w + lc * d + (1 - lc) * du for w, d, lc in zip(ws, deltas, lams)]
        res.append(np.concatenate(residuals()))
    residual = np.stack(res)
    bounds = np.cumsum([0] + [len(x) for x in xs])
    err_c = np.stack([(residual[:, s:e] ** 2).sum(1) for s, e in zip(bounds[:-1], bounds[1:])], axis=1)
    return FedSimResult(err=(residual**2).sum(1), err_clients=err_c, residuals=residual)


def theorem_bound(
    err: np.ndarray,
    err_clients: np.ndarray,
    lam: float | Sequence[float],
    s_min_global: float,
    s_min_clients: Sequence[float],
    local_steps: int,
    eta_l: float,
    eta_g: float,
    local_sum: str = "each",
) -> np.ndarray:
    """Right side of Theorem 1/2 for rounds t = 0..T−1: ‖e(t)‖² − ζη_g(1 − λ_max) s_min(H)‖e(t)‖²
    − ζ Σ_c λ s_min(H_c)‖e_c(t)‖², ζ = η_l K/(2N); λ in the sum is λ_c (``each``, the §4 form) or λ_min
    (``min``, Theorem 2 as stated in App. B.3)."""
    n_clients = err_clients.shape[1]
    lams = np.broadcast_to(np.asarray(lam, float), (n_clients,))
    zeta = eta_l * local_steps / (2 * n_clients)
    lam_sum = lams if local_sum == "each" else np.full(n_clients, lams.min())
    e, ec = err[:-1], err_clients[:-1]
    return e - zeta * eta_g * (1 - lams.max()) * s_min_global * e - zeta * (ec * lam_sum * np.asarray(s_min_clients)).sum(1)


def lemma4_matrix(
    h: np.ndarray, sizes: Sequence[int], lam: float | Sequence[float], local_steps: int, eta_l: float, eta_g: float
) -> np.ndarray:
    """A(λ) = diag(1 − λ)(η_l η_g K / N) H + diag(λ) η_l K H̃ (rows of client c scaled by its λ_c), so that
    y − y(t) ≈ (I − A)^t (y − y(0)) (Lemma 4; H̃ the block-diagonal part of H)."""
    n_clients = len(sizes)
    lams = np.repeat(np.broadcast_to(np.asarray(lam, float), (n_clients,)), sizes)
    glob = (1 - lams)[:, None] * (eta_l * eta_g * local_steps / n_clients) * h
    loc = lams[:, None] * eta_l * local_steps * block_diagonal(h, sizes)
    return glob + loc


def linear_residuals(a_mat: np.ndarray, e0: np.ndarray, rounds: int) -> np.ndarray:
    """(I − A)^t e0 for t = 0..rounds, stacked."""
    out = [e0]
    step = np.eye(len(e0)) - a_mat
    for _ in range(rounds):
        out.append(step @ out[-1])
    return np.stack(out)


def generalization_quantity(h: np.ndarray, a_mat: np.ndarray, y: np.ndarray) -> float:
    """√(2 yᵀ A^{-T} H A^{-1} y / n), the data-dependent term of Theorem 3 (descriptive)."""
    z = np.linalg.solve(a_mat, y)
    return float(np.sqrt(2 * z @ h @ z / len(y)))
