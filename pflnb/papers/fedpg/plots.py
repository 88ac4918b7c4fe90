"""FedPG notebook figures, in the project's style (pflnb.plots.set_style)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pflnb.plots import set_style


def direction_bars(G: np.ndarray, dirs: dict[str, np.ndarray], fair_grad: np.ndarray) -> plt.Figure:
    """Fig. 1 analogue: directional derivatives g_i·d of each method's direction (negative = descent), and ∇F·d."""
    set_style()
    rows = []
    for name, d in dirs.items():
        for i, v in enumerate(G @ d):
            rows.append({"method": name, "objective": f"client {i + 1}", "value": v})
        rows.append({"method": name, "objective": "F (fair)", "value": float(fair_grad @ d)})
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    sns.barplot(data=pd.DataFrame(rows), x="method", y="value", hue="objective", ax=ax, seed=0)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylabel("g·d  (< 0: descent; symlog)")
    ax.set_title("3-client toy of Fig. 1: which directions descend every objective?")
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def descent_probability(df: pd.DataFrame) -> plt.Figure:
    """Fraction of random instances where each method's direction is common descent, per (m, D) cell."""
    set_style()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    sns.barplot(data=df, x="cell", y="probability", hue="method", ax=ax, seed=0)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("(clients m, dimension D)")
    ax.set_ylabel("P(g_i·d < 0 for all i)")
    ax.set_title("Probability of a common descent direction (random gradients)")
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def drift_geometry(ghat: np.ndarray, d: np.ndarray, i: int, gamma: float) -> plt.Figure:
    """Fig. 3 analogue in 2-D: d, −ĝ_i, the drift segment d_i(γ), the cone {x: ĝ_j·x ≤ 0, j ≠ i}, γ_i; and the
    constraint value max_{j≠i} ĝ_j·d_i(γ) and the own gain ĝ_i·d_i(γ) against γ."""
    set_style()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.5))
    lim = 1.3 * max(np.abs(ghat).max(), np.abs(d).max())
    xs = np.linspace(-lim, lim, 300)
    X, Y = np.meshgrid(xs, xs)
    P = np.stack([X.ravel(), Y.ravel()], 1)
    others = np.delete(ghat, i, 0)
    ok = np.all(P @ others.T <= 0, axis=1).reshape(X.shape)
    ax.contourf(X, Y, ok.astype(float), levels=[0.5, 1.5], colors=["#cde7d8"])
    for j, g in enumerate(ghat):
        ax.annotate("", xy=g, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="grey" if j != i else "C3", lw=1.5))
        ax.text(*(1.05 * g), f"ĝ_{j + 1}", color="grey" if j != i else "C3")
    ax.annotate("", xy=-ghat[i], xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C3", ls="--", lw=1.5))
    ax.text(*(-1.05 * ghat[i]), f"−ĝ_{i + 1}", color="C3")
    ax.annotate("", xy=d, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C0", lw=2))
    ax.text(*(1.1 * d), "d", color="C0")
    seg = np.array([d + g * (-ghat[i] - d) for g in np.linspace(0, 1, 50)])
    ax.plot(seg[:, 0], seg[:, 1], color="C1", lw=1.5, label="d_i(γ), γ ∈ [0, 1]")
    di = d + gamma * (-ghat[i] - d)
    ax.annotate("", xy=di, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C2", lw=2))
    ax.plot(*di, "o", color="C2", label=f"d_{i + 1} at γ_{i + 1} = {gamma:.3f}")
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.legend(loc="lower left", fontsize="small")
    ax.set_title("direction drift (green: common-descent cone of the others)")
    gs = np.linspace(0, 1, 101)
    cons = [np.max(others @ (d + g * (-ghat[i] - d))) for g in gs]
    own = [ghat[i] @ (d + g * (-ghat[i] - d)) for g in gs]
    bx.plot(gs, cons, label="max_{j≠i} ĝ_j·d_i(γ)  (must stay ≤ 0)")
    bx.plot(gs, own, label="ĝ_i·d_i(γ)  (own first-order change)")
    bx.axhline(0, color="k", lw=0.8)
    bx.axvline(gamma, color="C2", ls="--", label="closed-form γ_i")
    bx.set_xlabel("γ")
    bx.legend(fontsize="small")
    bx.set_title("constraint and own gain along the drift")
    fig.tight_layout()
    return fig


def convex_diagnostics(runs: dict[str, dict[str, np.ndarray]]) -> plt.Figure:
    """Convex toy: ‖d_min^t‖ and T·min_{t<T}‖d_min^t‖² (FedPG), the largest per-round client-loss change, and the
    spread of the client losses, per method."""
    set_style()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    r = runs["FedPG"]
    t = np.arange(1, len(r["d_min"]) + 1)
    axes[0].loglog(t, r["d_min"], label="‖d_min^t‖")
    axes[0].loglog(t, t * np.minimum.accumulate(r["d_min"] ** 2), label="T·min_{t<T} ‖d_min^t‖²")
    axes[0].loglog(t, r["d_min"][0] / np.sqrt(t), "k:", label="1/√t guide")
    axes[0].set_xlabel("round t")
    axes[0].legend(fontsize="small")
    axes[0].set_title("Pareto stationarity (FedPG)")
    for name, run in runs.items():
        change = np.diff(run["losses"], axis=0).max(1)
        axes[1].plot(np.arange(1, len(change) + 1), change, label=name, lw=1)
        spread = run["losses"].max(1) - run["losses"].min(1)
        axes[2].semilogy(np.arange(len(spread)), spread, label=name)
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set_yscale("symlog", linthresh=1e-4)
    axes[1].set_xlabel("round t")
    axes[1].set_title("max_i [L_i(ω^{t+1}) − L_i(ω^t)]")
    axes[1].legend(fontsize="small")
    axes[2].set_xlabel("round t")
    axes[2].set_title("loss spread max_i L_i − min_i L_i")
    axes[2].legend(fontsize="small")
    fig.tight_layout()
    return fig


def pm_bars(table: pd.DataFrame, order: list[str] | None = None, title: str = "") -> plt.Figure:
    """Table 1 analogue: client-mean L-acc, S-acc, G-acc of the P-models and the G-model accuracy per method
    (mean over seeds, std over seeds as error bars)."""
    set_style()
    long = table.melt(id_vars=["method", "seed"], value_vars=["L", "S", "G", "GM"], var_name="metric", value_name="acc")
    long = long.dropna().assign(acc=lambda x: 100 * x.acc)
    long["metric"] = long.metric.map({"L": "L-acc (PM)", "S": "S-acc (PM)", "G": "G-acc (PM)", "GM": "GM acc"})
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * table.method.nunique() + 2), 4))
    sns.barplot(data=long, x="method", y="acc", hue="metric", errorbar="sd", order=order, ax=ax)
    ax.set_ylabel("accuracy (%)")
    ax.set_xlabel("")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=30)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def s_curves(df: pd.DataFrame, title: str = "") -> plt.Figure:
    """Fig. 4 analogue: client-mean S-acc against the share c of other clients' test data mixed in."""
    set_style()
    fig, ax = plt.subplots(figsize=(7, 4))
    d = df.assign(s_acc=100 * df.s_acc)
    sns.lineplot(data=d, x="c", y="s_acc", hue="method", marker="o", errorbar="sd", ax=ax)
    ax.set_xlabel("c: % of the other clients' test sets mixed in")
    ax.set_ylabel("mean S-acc (%)")
    ax.set_title(title)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def internals_panels(tables: dict[str, pd.DataFrame], gammas: np.ndarray) -> plt.Figure:
    """Per-round fraction of online clients whose loss rose (per variant) and the histogram of automatic γ_i."""
    set_style()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 3.8))
    for (name, t), ls in zip(tables.items(), ["-", "--", ":", "-."] * 3):
        ax.plot(t["round"], t["loss_rose_frac"].rolling(5, min_periods=1).mean(), ls=ls, lw=2, label=name)
    ax.set_xlabel("round")
    ax.set_ylabel("fraction of online clients whose loss rose")
    ax.set_title("conflicts per round (5-round moving mean)")
    ax.legend(fontsize="small")
    bx.hist(gammas, bins=40, color="C2")
    bx.set_xlabel("automatic γ_i")
    bx.set_ylabel("count (rounds × online clients)")
    bx.set_title("distribution of the automatic drift γ_i")
    fig.tight_layout()
    return fig


def s_acc_rounds(
    curves: pd.DataFrame, per_seed: list[str] | None = None, baselines: list[str] | None = None, title: str = ""
) -> plt.Figure:
    """Fig. 5 analogue: client-mean S-acc of the P-models against round; (a) mean over seeds with a ±1 std band per
    method (``baselines`` dashed), (b) one line per seed for the methods in ``per_seed`` (oscillations that the mean
    over seeds blurs)."""
    set_style()
    d = curves.assign(s_acc=100 * curves.s_acc)
    order = list(dict.fromkeys(d.method))
    cb = sns.color_palette("colorblind", 10)
    base = [m for m in order if m in (baselines or [])]
    fam = [m for m in order if m not in base]
    # the FedPG family in saturated colours, the baselines in muted ones (grey, brown, purple, pink)
    colours = {m: cb[[0, 9, 2, 3, 1, 8][k % 6]] for k, m in enumerate(fam)}
    colours.update({m: cb[[7, 5, 4, 6][k % 4]] for k, m in enumerate(base)})
    per_seed = [m for m in (per_seed or []) if m in colours]
    fig, axes = plt.subplots(1, 2 if per_seed else 1, figsize=(14 if per_seed else 8, 4.4), squeeze=False)
    ax = axes[0, 0]
    for m in order:
        g = d[d.method == m].groupby("round").s_acc
        mean, std = g.mean(), g.std(ddof=1).fillna(0.0)
        ls = "--" if m in base else "-"
        ax.plot(mean.index, mean.values, ls=ls, lw=1.8, color=colours[m], label=m)
        ax.fill_between(mean.index, mean - std, mean + std, color=colours[m], alpha=0.12, lw=0)
    ax.set_xlabel("round")
    ax.set_ylabel("mean S-acc of the P-models (%)")
    ax.set_title("(a) mean over seeds, ±1 std band (dashed: baselines)")
    ax.legend(fontsize="small", ncol=2, loc="upper left")
    if per_seed:
        bx = axes[0, 1]
        for m in per_seed:
            for k, (_, g) in enumerate(d[d.method == m].groupby("seed")):
                bx.plot(g["round"], g["s_acc"], color=colours[m], lw=1.3, alpha=0.9, label=m if k == 0 else None)
        bx.set_xlabel("round")
        bx.set_ylabel("mean S-acc of the P-models (%)")
        bx.set_title("(b) FedPG variants, one line per seed")
        bx.legend(fontsize="small", loc="upper left")
        bx.set_ylim(axes[0, 0].get_ylim())
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def gamma_tradeoff(summary: pd.DataFrame, title: str = "FedPG: personalization strength γ (protocol P2)") -> plt.Figure:
    """L-, S- and G-acc of the P-models and GM against the user γ (``summary``: :func:`gamma_table`'s, in %)."""
    set_style()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    order = list(summary.index)
    for metric in ("L", "S", "G"):
        ax.plot(order, summary[metric + "_mean"], marker="o", label=f"{metric}-acc (PM)")
    ax.plot(order, summary["GM_mean"], "k--", label="GM")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title)
    ax.legend()
    return fig
