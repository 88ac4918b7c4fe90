"""pMixFed figures (Figs. 4, 5, 7, 8, the λ-profile heatmaps, the λ-vs-learning-rate and theory checks),
built on :mod:`pflnb.plots`'s style."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator
from scipy import stats

from pflnb.algorithms.pmixfed import beta_alpha_schedule, lambda_aggregate, lambda_broadcast, mu_sigmoid, mu_simple
from pflnb.experiments.paper import ExperimentResult
from pflnb.experiments.tables import curve_table
from pflnb.papers.pmixfed import mixup as M
from pflnb.plots import learning_curves, set_style


def mu_curves(fractions: Sequence[float] = M.FIG8_FRACTIONS, bs: Sequence[float] = (0.5, 2.0)) -> plt.Figure:
    """Fig. 8: μ(acc) of Eq. 6 for several round fractions t/T (and slopes b at t/T = 0.1) against 1 − acc/100."""
    set_style()
    acc = np.linspace(0, 100, 401)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for f in fractions:
        axes[0].plot(acc, mu_sigmoid(acc, f, 1.0), label=f"sigmoid, t/T={f:g}")
    axes[0].plot(acc, mu_simple(acc), "k--", label="simple 1 − acc/100")
    for b in (*bs, 1.0):
        axes[1].plot(acc, mu_sigmoid(acc, 0.1, 1.0, b), label=f"sigmoid, t/T=0.1, b={b:g}")
    axes[1].plot(acc, mu_simple(acc), "k--", label="simple")
    for ax, title in zip(axes, ("Fig. 8: μ vs accuracy for several t/T", "slope b (Fig. 5's sigmoid variants)")):
        ax.set_xlabel("accuracy (%)")
        ax.set_title(title)
        ax.legend(fontsize="x-small")
    axes[0].set_ylabel("mix factor μ")
    fig.tight_layout()
    return fig


def beta_pdfs(alphas: Sequence[float] = M.FIG7_ALPHAS, horizon: int = 100) -> plt.Figure:
    """Fig. 7: pdfs of λ ~ Beta(α, α), and the adaptive α schedule of Eq. 31 over rounds."""
    set_style()
    x = np.linspace(0.002, 0.998, 500)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for a in alphas:
        axes[0].plot(x, stats.beta.pdf(x, a, a), label=f"α={a:g}")
    axes[0].set_ylim(0, 6)
    axes[0].set_xlabel("λ")
    axes[0].set_ylabel("density")
    axes[0].set_title("Fig. 7: Beta(α, α) mix factor")
    axes[0].legend(fontsize="small")
    rounds = np.arange(1, horizon + 1)
    axes[1].semilogy(rounds, [beta_alpha_schedule(int(t), horizon, "adaptive") for t in rounds], drawstyle="steps-post")
    axes[1].set_xlabel("round t")
    axes[1].set_ylabel("α(t)")
    axes[1].set_title("Eq. 31 adaptive schedule: 0.1 → 100 → 0.1")
    fig.tight_layout()
    return fig


def lambda_heatmaps(ns: Sequence[int] = (4, 5, 15), cs: Sequence[float] = (0.5, 1.0, 2.0), grid: int = 51) -> plt.Figure:
    """λ^B_i and λ^A_i of Eq. 7 over μ ∈ [0, 1] × block i, for several depths n (c = 1) and exponents c (n = 15)."""
    set_style()
    mus = np.linspace(0, 1, grid)
    cases = [(n, 1.0) for n in ns] + [(15, c) for c in cs if c != 1.0]
    fig, axes = plt.subplots(2, len(cases), figsize=(3.0 * len(cases), 5.8), squeeze=False)
    fig.subplots_adjust(left=0.06, right=0.88, bottom=0.09, top=0.86, wspace=0.3, hspace=0.55)
    for j, (n, c) in enumerate(cases):
        for i, (stage, fn) in enumerate((("broadcast λ^B", lambda_broadcast), ("aggregation λ^A", lambda_aggregate))):
            mat = np.stack([fn(m, n, c) for m in mus])
            ax = axes[i, j]
            im = ax.imshow(
                mat.T,
                aspect="auto",
                origin="lower",
                extent=(0, 1, 0.5, n + 0.5),
                vmin=0,
                vmax=1,
                cmap="viridis",
                interpolation="nearest",
            )
            ax.set_title(f"{stage}\nn={n}, c={c:g}", fontsize="small")
            ax.set_xlabel("μ")
            if j == 0:
                ax.set_ylabel("block i (1 = base, n = head)")
            ax.grid(False)
    fig.colorbar(im, cax=fig.add_axes((0.9, 0.15, 0.015, 0.65)), label="λ (weight on the global model)")
    fig.suptitle("Eq. 7 λ-profiles over μ and block")
    return fig


def lr_equivalence(seed: int = 0, lr: float = 0.05, steps_max: int = 20) -> tuple[plt.Figure, dict[str, float]]:
    """λ vs learning rate: (a) E1 residual against the paper's λ = η_g/η_l residual over λ; (b) deviation of
    "r steps then mix" from "r steps at (1−λ)η" on a quadratic with the C(r,2)η²λ(1−λ)‖A²e0‖ prediction;
    (c) the same with Adam on logistic regression. Returns the figure and the largest E1 residual."""
    set_style()
    clients, omega = M.quadratic_clients(4, 6, seed)
    g = np.random.default_rng(seed + 1).standard_normal(6)
    lams = np.linspace(0, 1, 41)
    res = np.array([M.e1_residuals(float(lam), lr, clients, omega, g) for lam in lams])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].semilogy(lams, np.maximum(res[:, 0], 1e-18), "o-", ms=3, label="exact: η_g = (1 − λ)η_l")
    axes[0].semilogy(lams, np.maximum(res[:, 1], 1e-18), "s-", ms=3, label="paper: η_g = λ·η_l")
    axes[0].axvline(0.5, color="gray", ls=":")
    axes[0].set_xlabel("λ")
    axes[0].set_ylabel("max |mix − FedSGD|")
    axes[0].set_title("(a) one local step: E1")
    axes[0].legend(fontsize="small")
    q = clients[0]
    e0 = g - q.b
    rs = np.arange(1, steps_max + 1)
    for lam in (0.1, 0.3, 0.5, 0.7, 0.9):
        dev = [np.linalg.norm(M.deviation_simulated(q, g, lr, lam, int(r))) for r in rs]
        pred = [comb(int(r), 2) * lr**2 * lam * (1 - lam) * np.linalg.norm(q.A @ q.A @ e0) for r in rs]
        (line,) = axes[1].semilogy(rs, np.maximum(dev, 1e-18), "o-", ms=3, label=f"λ={lam}")
        axes[1].semilogy(rs, np.maximum(pred, 1e-18), "--", color=line.get_color())
    axes[1].set_xlabel("local steps r")
    axes[1].set_ylabel("‖deviation‖")
    axes[1].set_title("(b) quadratic, SGD; dashed: C(r,2)η²λ(1−λ)‖A²e0‖")
    axes[1].legend(fontsize="x-small")
    rng = np.random.default_rng(seed + 2)
    x = rng.standard_normal((200, 5))
    y = (x @ rng.standard_normal(5) + 0.5 * rng.standard_normal(200) > 0).astype(float)
    grad = M.logistic_loss_grad(x, y, 0.01)
    w0 = rng.standard_normal(5)
    for lam in (0.1, 0.5, 0.9):
        dev = M.adam_deviation_curve(w0, grad, 1e-2, lam, steps_max)
        axes[2].semilogy(rs, np.maximum(dev, 1e-18), "o-", ms=3, label=f"λ={lam}")
    axes[2].set_xlabel("local Adam steps r")
    axes[2].set_ylabel("‖mix(Adam_r(η)) − Adam_r((1−λ)η)‖")
    axes[2].set_title("(c) logistic regression, Adam (E4: exact at r = 1)")
    axes[2].legend(fontsize="small")
    fig.tight_layout()
    return fig, {"e1_max": float(res[:, 0].max()), "paper_min_off_half": float(res[np.abs(lams - 0.5) > 0.05, 1].min())}


def fixed_point_figure(seed: int = 0, lr: float = 0.1, steps: int = 5, rounds: int = 60) -> tuple[plt.Figure, dict[str, float]]:
    """‖G^t − G*_FedAvg‖ for λ ∈ {0, .5, .9} on heterogeneous quadratics (E6), with the E5 EMA reconstruction error."""
    set_style()
    clients, omega = M.quadratic_clients(4, 6, seed)
    m, v = M.fedavg_affine_map(clients, omega, lr, steps)
    star = M.fixed_point(m, v)
    g0 = np.random.default_rng(seed + 3).standard_normal(6) * 3
    fig, ax = plt.subplots(figsize=(6.4, 4))
    out = {}
    for lam in (0.0, 0.5, 0.9):
        traj = M.iterate_mixed_fedavg(g0, m, v, lam, rounds)
        ax.semilogy(np.linalg.norm(traj - star, axis=1), label=f"λ={lam}")
        averages = [m @ traj[s] + v for s in range(rounds)]
        out[f"ema_err_{lam}"] = float(np.max(np.abs(M.ema_closed_form(g0, averages, lam) - traj[-1])))
        out[f"fp_gap_{lam}"] = float(np.linalg.norm(M.fixed_point(m, v, lam) - star)) if lam < 1 else np.nan
    a = sum(o * c.A for o, c in zip(omega, clients))
    w_opt = np.linalg.solve(a, sum(o * c.A @ c.b for o, c in zip(omega, clients)))
    out["drift"] = float(np.linalg.norm(star - w_opt))
    ax.set_xlabel("round t")
    ax.set_ylabel("‖G^t − G*_FedAvg‖")
    ax.set_title(f"E6: same fixed point, slower for larger λ (drift ‖G* − w_opt‖ = {out['drift']:.3f})")
    ax.legend()
    fig.tight_layout()
    return fig, out


def lemma1_figure(
    l1: float = 2.0, lr: float = 0.1, sigma2: float = 0.5, rounds: int = 2000
) -> tuple[plt.Figure, dict[str, float]]:
    """Lemma 1 (Eq. 21) sides over r (isotropic: equality; anisotropic: inequality) and Theorem 3's running
    average of E‖∇ℒ‖² (σ = 0 decays like 1/T; σ > 0 plateaus at the closed-form noise floor)."""
    set_style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    rs = np.arange(1, 31)
    iso = np.array([M.lemma1_sides(np.full(4, l1), np.ones(4), lr, sigma2, int(r)) for r in rs])
    ani = np.array([M.lemma1_sides(np.array([2.0, 1.0, 0.5, 0.1]), np.ones(4), lr, sigma2, int(r)) for r in rs])
    axes[0].plot(rs, iso[:, 0], "o", ms=4, label="isotropic LHS")
    axes[0].plot(rs, iso[:, 1], "-", label="isotropic RHS")
    axes[0].plot(rs, ani[:, 0], "s", ms=4, label="anisotropic LHS")
    axes[0].plot(rs, ani[:, 1], "--", label="anisotropic RHS")
    axes[0].set_xlabel("local steps r")
    axes[0].set_ylabel("E ℒ(x_r)  vs  bound")
    axes[0].set_title("Lemma 1 (Eq. 21), exact expectations")
    axes[0].legend(fontsize="small")
    floor = M.noise_floor(l1, lr, sigma2)
    t = np.arange(1, rounds + 1)
    noisy = M.grad_norm_running_average(l1, lr, sigma2, rounds)
    clean = M.grad_norm_running_average(l1, lr, 0.0, rounds)
    axes[1].loglog(t, noisy, label=f"σ² = {sigma2}")
    axes[1].loglog(t, clean, label="σ = 0")
    axes[1].loglog(t, clean[0] / t * 2, "k:", label="∝ 1/T")
    axes[1].axhline(floor, color="r", ls="--", label=f"floor L₁²η²σ²/(1−(1−ηL₁)²) = {floor:.4f}")
    axes[1].set_xlabel("T")
    axes[1].set_ylabel("(1/T) Σ E‖∇ℒ‖²")
    axes[1].set_title("Theorem 3's O(1/T) fails when σ > 0")
    axes[1].legend(fontsize="x-small")
    fig.tight_layout()
    return fig, {
        "iso_max_gap": float(np.max(np.abs(iso[:, 0] - iso[:, 1]))),
        "ani_min_slack": float(np.min(ani[:, 1] - ani[:, 0])),
        "floor": floor,
        "noisy_last": float(noisy[-1]),
        "clean_last": float(clean[-1]),
    }


def unseen_bars(df: pd.DataFrame, title: str = "") -> plt.Figure:
    """Table 1 analogue: unseen-client accuracy before / after fine-tuning per method (mean ± sd over seeds),
    one panel per (dataset, setting); ``df``: :func:`experiments.unseen_table`."""
    set_style()
    long = df.melt(id_vars=["label", "dataset", "setting", "seed"], value_vars=["before", "after"], var_name="when")
    long["value"] = 100 * long["value"]
    panels = long[["dataset", "setting"]].drop_duplicates().values.tolist()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (ds, st) in zip(axes[0], panels):
        sub = long[(long.dataset == ds) & (long.setting == st)]
        sns.barplot(data=sub, x="label", y="value", hue="when", errorbar="sd", ax=ax)
        ax.set_title(f"{ds}, {st}")
        ax.set_xlabel("")
        ax.set_ylabel("unseen-client accuracy (%)")
        ax.tick_params(axis="x", rotation=60)
        ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def mu_trajectories(mu: pd.DataFrame, hue: str = "variant", ax: plt.Axes | None = None, title: str = "") -> plt.Axes:
    """Client-mean μ_k (solid) and aggregation μ_A (dashed) against round, mean over seeds."""
    set_style()
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4))
    sns.lineplot(data=mu, x="round", y="mu_client_mean", hue=hue, errorbar=None, ax=ax)
    sns.lineplot(data=mu, x="round", y="mu_agg", hue=hue, errorbar=None, ax=ax, linestyle="--", legend=False)
    ax.set_ylabel("μ (solid: client mean μ_k; dashed: μ_A)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.legend(fontsize="x-small")
    return ax


def depth_accuracy(df: pd.DataFrame, paper: dict[int, tuple[float, float]] | None = None, reference: str = "") -> plt.Figure:
    """Table 3 analogue: per-depth client accuracy (mean ± sd over clients and seeds) of each variant, with the
    paper's values; right, each variant's per-depth gain over ``reference`` (seed-paired client means)."""
    set_style()
    d = df.assign(acc=100 * df["acc"])
    order = list(dict.fromkeys(d.variant))
    palette = dict(zip(order, sns.color_palette(n_colors=len(order))))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    kw = dict(x="depth", y="acc", hue="variant", errorbar="sd", markersize=4, palette=palette)
    sns.pointplot(data=d, hue_order=order, dodge=0.3, ax=axes[0], **kw)
    if paper:
        depths = sorted(d.depth.unique())
        keys = [k for k in sorted(paper) if k in depths]
        axes[0].plot([depths.index(k) for k in keys], [paper[k][1] for k in keys], "k--", marker="s", label="paper (Table 3)")
        axes[0].legend(fontsize="x-small")
    axes[0].set_xlabel("client depth M_k (blocks)")
    axes[0].set_ylabel("client test accuracy (%)")
    axes[0].set_title("per-depth accuracy, one federation", fontsize="medium")
    if reference:
        means = d.groupby(["variant", "seed", "depth"]).acc.mean()
        ref = means.xs(reference, level="variant")
        gain = (means - ref.reindex(means.index.droplevel("variant")).to_numpy()).reset_index()
        gain = gain[gain.variant != reference]
        sns.pointplot(data=gain, hue_order=[v for v in order if v != reference], dodge=0.2, ax=axes[1], **kw)
        axes[1].axhline(0, color="gray", lw=0.8)
        axes[1].set_ylabel(f"gain over {reference} (points)")
        axes[1].set_xlabel("client depth M_k (blocks)")
        axes[1].set_title("what federation adds at each depth (sd over seeds)", fontsize="medium")
        axes[1].legend(fontsize="x-small")
    else:
        axes[1].set_visible(False)
    fig.tight_layout()
    return fig


def learning_curve_grid(result: ExperimentResult, title: str = "") -> plt.Figure:
    """Fig. 3 analogue: participating clients' personalized test accuracy against round, one panel per
    (dataset, setting) cell of ``result``, one line per method (mean ± sd over seeds)."""
    curves = curve_table(result.records)
    curves["setting"] = [st for r, st in zip(result.records, result.table["setting"]) for _ in r["evals"]]
    panels = curves[["dataset", "setting"]].drop_duplicates().values.tolist()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    for ax, (ds, st) in zip(axes[0], panels):
        learning_curves(curves[(curves.dataset == ds) & (curves.setting == st)], metric="test_acc", ax=ax, title=f"{ds}, {st}")
        ax.legend(fontsize="xx-small", ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def mu_strategies(records: Sequence[dict], mu: pd.DataFrame) -> plt.Figure:
    """Fig. 5 analogue: seen clients' test accuracy per μ strategy (the records' labels, left) and the adaptive
    strategies' client-mean μ_k and aggregation μ_A (right), mean over seeds; ``mu`` is
    :func:`experiments.mu_table` of the records."""
    curves = curve_table(records)
    curves["variant"] = [r["label"] for r in records for _ in r["evals"]]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    learning_curves(curves, metric="test_acc", hue="variant", ax=axes[0], title="seen clients' test accuracy")
    axes[0].legend(fontsize="xx-small")
    mu_trajectories(mu[mu.variant.str.startswith(("sigmoid", "simple"))], ax=axes[1], title="adaptive μ over rounds")
    fig.tight_layout()
    return fig


def mu_lambda_evolution(record: dict, title: str = "") -> plt.Figure:
    """How μ and λ evolve in one pMixFed run, from its logged internals: (a) each client's μ_k and the server's μ_A
    per round; (b) the validation accuracies that set them; (c) the client-mean broadcast λ^B_i and (d) the
    aggregation λ^A_i per round and block (i = 1 base … n head)."""
    set_style()
    rounds = [e["round"] for e in record["rounds"]]
    fig, axes = plt.subplots(1, 4, figsize=(19, 3.9), gridspec_kw={"width_ratios": [1.1, 1.1, 1, 1]})
    clients = sorted({c for e in record["rounds"] for c in e["client_metrics"]}, key=int)
    for c in clients:
        pts = [(e["round"], e["client_metrics"][c]) for e in record["rounds"] if c in e["client_metrics"]]
        axes[0].plot([t for t, _ in pts], [m["mu"] for _, m in pts], color="tab:blue", alpha=0.35, lw=0.8)
        axes[1].plot([t for t, _ in pts], [m["acc_local"] for _, m in pts], color="tab:blue", alpha=0.35, lw=0.8)
    axes[0].plot([], [], color="tab:blue", alpha=0.5, label="μ_k (one line per client)")
    axes[0].plot(rounds, [e["internals"]["mu_agg"] for e in record["rounds"]], "k--o", ms=3, label="μ_A (server)")
    axes[1].plot([], [], color="tab:blue", alpha=0.5, label="local model L_k")
    axes[1].plot(rounds, [e["internals"]["acc_global"] for e in record["rounds"]], "k--o", ms=3, label="global model G (mean)")
    axes[1].axhline(50, color="gray", lw=0.8, ls=":")
    axes[0].set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("mix factor μ")
    axes[0].set_title("(a) μ per round (Eq. 6)", fontsize="medium")
    split = record["config"]["method_params"].get("acc_split", "val")
    axes[1].set_ylabel(f"{split} accuracy (%)")
    axes[1].set_title(f"(b) the {split} accuracy that sets μ", fontsize="medium")
    for ax in axes[:2]:
        ax.set_xlabel("round t")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize="x-small")
    lam_b = np.array([np.mean([m["lam_broadcast"] for m in e["client_metrics"].values()], axis=0) for e in record["rounds"]])
    lam_a = np.array([e["internals"]["lam_agg"] for e in record["rounds"]])
    for ax, mat, name in ((axes[2], lam_b, "(c) λ^B_i, client mean (Eq. 7)"), (axes[3], lam_a, "(d) λ^A_i (Eq. 7)")):
        extent = (rounds[0] - 0.5, rounds[-1] + 0.5, 0.5, mat.shape[1] + 0.5)
        kw = dict(aspect="auto", origin="lower", vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
        im = ax.imshow(mat.T, extent=extent, **kw)
        ax.set_xlabel("round t")
        ax.set_ylabel("block i (1 = base)")
        ax.set_yticks(range(1, mat.shape[1] + 1))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(name, fontsize="medium")
        ax.grid(False)
    fig.colorbar(im, ax=axes[3], label="λ (weight on the global model)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def recovery(curves: pd.DataFrame, mu: pd.DataFrame, shock_round: int) -> plt.Figure:
    """Fig. 4 analogue: seen clients' accuracy with / without a forced collapse after ``shock_round`` (left, hue
    ``run``) and pMixFed's μ with / without it (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    title = f"seen clients' accuracy, shock after round {shock_round}"
    learning_curves(curves, metric="test_acc", hue="run", ax=axes[0], title=title)
    mu_trajectories(mu, hue="run", ax=axes[1], title="pMixFed μ with / without the shock")
    for ax in axes:
        ax.axvline(shock_round, color="gray", ls=":")
    fig.tight_layout()
    return fig
