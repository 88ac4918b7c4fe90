"""FedFac figures built on :mod:`pflnb.plots`'s style: Figs. 1–2, the theory, the simulation and the benchmark tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pflnb.algorithms.fedfac import stability
from pflnb.plots import set_style


def motivation_figure(runs: Mapping[str, Sequence[dict[str, Any]]], bins: int = 40) -> plt.Figure:
    """Figs. 1–2: heatmaps of the mean activation of each neuron (rows) in each client (columns) for the first
    run of every split, neurons grouped by the client that activates them most, and histograms of the per-neuron
    Kozachenko–Leonenko entropy across clients, pooled over the runs (dead neurons left out)."""
    set_style()
    splits = list(runs)
    fig, axes = plt.subplots(1, len(splits) + 1, figsize=(5.2 * (len(splits) + 1), 4.2))
    for ax, split in zip(axes, splits):
        act = runs[split][0]["activations"]
        order = np.lexsort((-act.max(1), act.argmax(1)))  # neurons grouped by the client that activates them most
        im = ax.imshow(act[order], aspect="auto", cmap="viridis", interpolation="nearest")
        ax.set_title(f"Fig. 1 analogue: {split}")
        ax.set_xlabel("client" + (" (grouped by digit)" if split != "iid" else ""))
        ax.set_ylabel("neuron (sorted by most active client)")
        ax.grid(False)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02, label="mean ReLU activation")
    ent = {s: np.concatenate([r["entropy"] for r in runs[s]]) for s in splits}
    ent = {s: e[np.isfinite(e)] for s, e in ent.items()}
    lo = min(e.min() for e in ent.values())
    hi = max(e.max() for e in ent.values())
    edges = np.linspace(lo, hi, bins + 1)
    for i, s in enumerate(splits):
        axes[-1].hist(ent[s], bins=edges, alpha=0.55, color=f"C{i}", label=f"{s} (median {np.median(ent[s]):.2f})")
    axes[-1].set_xlabel("KL entropy of a neuron's activation across clients")
    axes[-1].set_ylabel(f"neurons ({len(runs[splits[0]])} runs pooled)")
    axes[-1].set_title("Fig. 2 analogue: per-neuron entropy")
    axes[-1].legend(fontsize="small")
    fig.tight_layout()
    return fig


def kernel_figure(eig: pd.DataFrame, hs: np.ndarray, hp: np.ndarray) -> plt.Figure:
    """λ_min of H^s∞ and H^p∞ per seed, and the two spectra of one seed."""
    set_style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    long = eig.melt(id_vars="seed", value_vars=["lambda_s", "lambda_p"])
    sns.barplot(data=long, x="seed", y="value", hue="variable", ax=axes[0], seed=0)
    axes[0].set_title("λ_min of H^s∞ and H^p∞ (λp ≥ λs)")
    axes[0].legend(loc="lower right", fontsize="small")
    axes[1].semilogy(np.linalg.eigvalsh(hs)[::-1], "o-", ms=3, label="H^s∞")
    axes[1].semilogy(np.linalg.eigvalsh(hp)[::-1], "s-", ms=3, label="H^p∞")
    axes[1].set_xlabel("index")
    axes[1].set_title("spectra (seed 0)")
    axes[1].legend()
    fig.tight_layout()
    return fig


def thm1_figure(run: dict[str, Any], m: int) -> plt.Figure:
    """Relative loss of FedSplit, FedAvg and the shared two-branch model with the Theorem 1 bound curves."""
    set_style()
    c, r = run["curves"], run["rates"]
    t = np.arange(len(c["fedsplit"]))
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for mode, color in (("fedsplit", "C0"), ("fedavg", "C1"), ("shared", "C2")):
        ax.semilogy(t, c[mode] / c[mode][0], color=color, label=f"{mode} (empirical)")
    for mode, color in (("fedsplit", "C0"), ("fedavg", "C1")):
        ax.semilogy(t, r[f"bound_{mode}"] ** t, "--", color=color, label=f"{mode}: Thm 1 bound")
    ax.set_xlabel("round t")
    ax.set_ylabel("‖h(t) − y‖² / ‖h(0) − y‖²")
    ax.set_title(f"Theorem 1 (m1 = m2 = {m}, seed 0)")
    ax.legend(fontsize="small")
    return fig


def thm2_figure(thm2: pd.DataFrame) -> plt.Figure:
    """B(C) and the Arora/FedAvg term against the number of clients (log-log)."""
    set_style()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(thm2.index, thm2["B(C)"], "o-", label="B(C) (FedSplit, Thm 2)")
    ax.plot(thm2.index, thm2["Arora/FedAvg"], "s--", label="Arora/FedAvg term")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(thm2.index), [str(c) for c in thm2.index])
    ax.minorticks_off()
    ax.set_xlabel("number of clients C (N = 120 fixed)")
    ax.set_title("Theorem 2 term vs C")
    ax.legend()
    return fig


def recovery_figure(z_small: np.ndarray, nu: np.ndarray, truth: np.ndarray, recovery: pd.DataFrame) -> plt.Figure:
    """Fig. 4 analogue (Z of three clients), the ν histogram by true role, and recovery AUC vs κ (converged fit and
    the earlier 50-iteration PAF)."""
    set_style()
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8), gridspec_kw={"width_ratios": [1, 1.2, 1.2]})
    axes[0].imshow(z_small, aspect="auto", cmap="coolwarm")
    axes[0].set_title("Z: 3 clients × 12 inputs (rows) × 16 units\n(units 8–15 shared)")
    axes[0].set_xlabel("hidden unit j")
    axes[0].grid(False)
    axes[1].hist([nu[~truth], nu[truth]], bins=30, stacked=True, label=["personalized (true)", "shared (true)"])
    axes[1].set_xlabel("communality ν")
    axes[1].set_title("ν at p = 0.5, κ = 0.85 (converged fit)")
    axes[1].legend(fontsize="small")
    long = pd.concat(
        [
            recovery.assign(fit="converged (minres)")[["p", "kappa", "auc", "fit"]],
            recovery.assign(fit="PAF, 50 iterations", auc=recovery["paf50 auc"])[["p", "kappa", "auc", "fit"]],
        ]
    )
    sns.lineplot(data=long, x="kappa", y="auc", hue="p", style="fit", marker="o", ax=axes[2], palette="colorblind", seed=0)
    axes[2].set_title("recovery AUC vs κ")
    axes[2].axhline(0.5, color="grey", ls=":", lw=0.8)
    axes[2].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def simulation_figure(
    sim: pd.DataFrame, recs: dict[Any, dict[str, Any]], methods: Sequence[str], layer: str = "fc1"
) -> plt.Figure:
    """Fig. 6 analogue (accuracy per decomposition method and setting) and Fig. 7 analogue (stable fraction per
    round at p = 0.5, α = 0.4 for the dynamic variants and the redrawn random split)."""
    set_style()
    fig, axes = plt.subplots(1, 2, figsize=(15, 4.2), gridspec_kw={"width_ratios": [1.5, 1]})
    d = sim[sim.method.isin(methods)].assign(setting=lambda x: "p=" + x.p.astype(str) + ", α=" + x.alpha.astype(str))
    sns.barplot(data=d, x="setting", y="acc", hue="method", hue_order=list(methods), ax=axes[0], errorbar="sd")
    axes[0].set_ylim(0.4, None)
    axes[0].set_ylabel("test accuracy (last 5 rounds)")
    axes[0].set_title("Fig. 6 analogue: decomposition methods")
    axes[0].set_xlabel("")
    sns.move_legend(axes[0], "upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, fontsize="x-small", title=None, frameon=False)
    styles = {"dynamic": "-", "dynamic_paf": "-.", "dynamic_updates": "--", "random_redrawn": ":"}
    seen = set()
    for (p, a, lab, _s), rec in recs.items():
        if (p, a) == (0.5, 0.4) and lab in styles:
            st = stability(rec, layer)
            axes[1].plot(
                np.arange(1, len(st) + 1),
                st,
                styles[lab],
                color=f"C{list(styles).index(lab)}",
                label=None if lab in seen else lab,
            )
            seen.add(lab)
    axes[1].set_ylim(0, 1.05)
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("fraction of units keeping their state")
    axes[1].set_title("Fig. 7 analogue: partition stability (p=0.5, α=0.4)")
    axes[1].legend(fontsize="small")
    fig.tight_layout()
    return fig


def table2_figure(t2: pd.DataFrame, clients: pd.DataFrame, methods: Sequence[str], first: str) -> plt.Figure:
    """Table 2 analogue (bars per setting and method) and Fig. 8 analogue (per-client accuracy on ``first``, ordered
    by median, FedFac highlighted)."""
    set_style()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.2), gridspec_kw={"width_ratios": [1.4, 1]})
    order_m = [m for m in methods if m in set(t2.label)]
    sns.barplot(
        data=t2.assign(acc=100 * t2.test_acc), x="setting", y="acc", hue="label", hue_order=order_m, ax=axes[0], errorbar="sd"
    )
    axes[0].set_ylabel("client-mean test accuracy (%)")
    axes[0].set_title("Table 2 analogue (Fashion-MNIST, 100 clients, 10 % participation)")
    sns.move_legend(axes[0], "upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small", title=None, frameon=False)
    order = clients.groupby("label").test_acc.median().sort_values().index.tolist()
    sns.boxplot(
        data=clients.assign(acc=100 * clients.test_acc),
        y="label",
        x="acc",
        order=order,
        ax=axes[1],
        palette=["C1" if "FedFac" in o else "C0" for o in order],
        hue="label",
        hue_order=order,
        legend=False,
    )
    axes[1].set_xlabel("per-client test accuracy (%)")
    axes[1].set_ylabel("")
    axes[1].set_title(f"Fig. 8 analogue: per-client accuracy, {first}")
    fig.tight_layout()
    return fig


def loss_figure(curves: pd.DataFrame) -> plt.Figure:
    """Fig. 9 analogue: mean training loss per round (over seeds) of FedAvg and FedFac, one panel per setting."""
    set_style()
    settings = list(dict.fromkeys(curves.setting))
    g = sns.relplot(
        data=curves,
        x="round",
        y="loss",
        hue="label",
        col="setting",
        col_order=settings,
        kind="line",
        errorbar=None,
        height=3.4,
        aspect=1.05,
    )
    g.set_axis_labels("round", "training loss")
    return g.figure


def digits5_figure(d5: pd.DataFrame, clients: pd.DataFrame, n_seeds: int) -> plt.Figure:
    """digits5-lite: client-mean accuracy per method and per-domain accuracy."""
    set_style()
    order = d5.groupby("label").test_acc.mean().sort_values().index.tolist()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.0), gridspec_kw={"width_ratios": [1, 1.6]})
    sns.barplot(
        data=d5.assign(acc=100 * d5.test_acc),
        y="label",
        x="acc",
        order=order,
        ax=axes[0],
        errorbar="sd",
        hue="label",
        hue_order=order,
        palette=["C1" if "FedFac" in o else "C0" for o in order],
        legend=False,
    )
    axes[0].set_xlabel("client-mean test accuracy (%)")
    axes[0].set_ylabel("")
    axes[0].set_title(f"digits5-lite, 5 domains ({n_seeds} seeds, ± sd)")
    sns.barplot(
        data=clients.assign(acc=100 * clients.test_acc),
        x="domain",
        y="acc",
        hue="label",
        hue_order=order,
        ax=axes[1],
        errorbar="sd",
    )
    axes[1].set_ylabel("test accuracy (%)")
    axes[1].set_xlabel("")
    axes[1].set_title("per domain (client)")
    sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small", title=None, frameon=False)
    fig.tight_layout()
    return fig


def bars_figure(t: pd.DataFrame, x: str, y: str, hue: str, title: str, ylabel: str) -> plt.Figure:
    """One grouped bar chart (± sd over seeds) with the legend outside."""
    set_style()
    fig, ax = plt.subplots(figsize=(11, 3.8))
    sns.barplot(data=t, x=x, y=y, hue=hue, ax=ax, errorbar="sd")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small", title=None, frameon=False)
    fig.tight_layout()
    return fig


def tuning_figure(tune: pd.DataFrame) -> plt.Figure:
    """Tables 4–6 analogue: validation (solid, used for the choice) and test (dashed, shown only) accuracy per knob, on
    the tuning table's setting."""
    set_style()
    setting = tune.setting.iloc[0]
    knobs = list(dict.fromkeys(tune.knob))
    fig, axes = plt.subplots(1, len(knobs), figsize=(4.4 * len(knobs), 3.4), sharey=True, squeeze=False)
    for ax, knob in zip(axes[0], knobs):
        d = tune[tune.knob == knob]
        xs = [str(v) for v in d.value]
        ax.plot(xs, d.val_acc, "o-", label="validation (chooses)")
        ax.plot(xs, d.test_acc, "s--", alpha=0.6, label="test (shown only)")
        ch = d[d.chosen]
        ax.plot([str(v) for v in ch.value], ch.val_acc, "*", ms=14, color="C3", label="chosen")
        ax.set_title(f"{knob} ({setting})")
        ax.set_xlabel(knob)
    axes[0][0].set_ylabel("client-mean accuracy (%)")
    axes[0][0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def time_figure(tt: pd.DataFrame) -> plt.Figure:
    """Table 7 analogue: mean training-time ratio to FedAvg per method (wall-clock: save it under a ``timing`` name)."""
    set_style()
    ratio = tt[tt.label != "FedAvg"].groupby("label").ratio.mean().sort_values()
    share = float(tt[tt.label == "FedFac dynamic"].fa_share.mean())
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ratio.plot.barh(ax=ax, color=["C1" if "FedFac" in i else "C0" for i in ratio.index])
    ax.axvline(1.0, color="grey", ls=":")
    ax.set_xlabel("training time / FedAvg training time")
    ax.set_ylabel("")
    ax.set_title(f"Table 7 analogue (FA = {100 * share:.1f} % of dynamic FedFac's time)")
    fig.tight_layout()
    return fig


def ablation_figure(abl: pd.DataFrame) -> plt.Figure:
    """Table 8 analogue: client-mean test accuracy of the FA split against masked and random splits (one bar per
    ``label``)."""
    set_style()
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    sns.barplot(data=abl.assign(acc=100 * abl.test_acc), x="setting", y="acc", hue="label", ax=ax, errorbar="sd")
    ax.set_ylabel("client-mean test accuracy (%)")
    ax.set_title("Table 8 analogue: ablation (τ = median)")
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small", title=None, frameon=False)
    fig.tight_layout()
    return fig


def sweeps_figure(sweeps: Mapping[str, pd.DataFrame], metrics: Mapping[str, str]) -> plt.Figure:
    """Tables 4–6 judged: per knob (``sweeps``: knob → :func:`~pflnb.papers.fedfac.claims.sweep_table`), the mean
    and sd over seeds of the accuracy its claim reads (``metrics``: knob → ``val_acc`` or ``test_acc``), one line per
    skew level, the arms in the order swept."""
    set_style()
    fig, axes = plt.subplots(1, len(sweeps), figsize=(4.4 * len(sweeps), 3.4), squeeze=False)
    for ax, (knob, t) in zip(axes[0], sweeps.items()):
        metric = metrics[knob]
        for i, (setting, d) in enumerate(t.groupby("setting", sort=False)):
            g = d.groupby("label", sort=False)[metric]
            mean, sd = 100 * g.mean(), 100 * g.std().fillna(0.0)
            xs = np.arange(len(mean)) + (i - 0.5) * 0.08
            ax.errorbar(xs, mean.to_numpy(), yerr=sd.to_numpy(), fmt="o-", capsize=3, label=setting)
            ax.set_xticks(np.arange(len(mean)), [str(v) for v in mean.index])
        table = {"Λ": "Table 4", "τ": "Table 5", "κ": "Table 6"}.get(knob, "")
        ax.set_title(f"{table}: {knob}, {t.seed.nunique()} seeds" if table else f"{knob}, {t.seed.nunique()} seeds")
        ax.set_xlabel(knob)
        ax.set_ylabel(f"client-mean {'validation' if metric == 'val_acc' else 'test'} accuracy (%)")
    axes[0][0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def featuremaps_figure(record: dict[str, Any], similarity: Mapping[str, Mapping[int, float]], per_row: int = 8) -> plt.Figure:
    """Fig. 10 analogue: one client's test image, the maps of FedFac's split conv layer (S = shared, P = personalized)
    and FedAvg's same channels (from one run's ``featuremaps``, ``per_row`` channels a row), and per seed the mean
    correlation of the shared and of the personalized channels with FedAvg's (``similarity``)."""
    set_style()
    fm = record["featuremaps"]
    ex, shared = fm["example"], fm["shared"]
    maps = {"FedFac": np.asarray(ex["fedfac"]), "FedAvg": np.asarray(ex["fedavg"])}
    n = maps["FedFac"].shape[0]
    rows = -(-n // per_row)
    fig = plt.figure(figsize=(0.9 * per_row + 7.0, 1.0 * 2 * rows + 1.0))
    grid = fig.add_gridspec(2 * rows, per_row + 7, wspace=0.15, hspace=0.45, left=0.02, right=0.98, top=0.85, bottom=0.1)
    ax = fig.add_subplot(grid[:, :3])
    image = np.asarray(ex["image"])
    ax.imshow(image[0] if image.shape[0] == 1 else np.moveaxis(image, 0, -1), cmap="gray")
    ax.set_title("client 0, a test image", fontsize="small")
    ax.axis("off")
    for block, (who, m) in enumerate(maps.items()):
        for j in range(n):
            a = fig.add_subplot(grid[block * rows + j // per_row, 3 + j % per_row])
            a.imshow(m[j], cmap="viridis")
            a.set_xticks([])
            a.set_yticks([])
            a.set_title(f"{who} {j}{'S' if shared[j] else 'P'}", fontsize=7, color="C0" if shared[j] else "C3", pad=2)
    ax = fig.add_subplot(grid[:, per_row + 5 :])
    seeds = sorted(similarity["shared"])
    for k, (group, color) in enumerate((("shared", "C0"), ("personalized", "C3"))):
        ax.plot([k] * len(seeds), [similarity[group][s] for s in seeds], "o", color=color, alpha=0.7)
    for s in seeds:
        ax.plot([0, 1], [similarity["shared"][s], similarity["personalized"][s]], color="grey", lw=0.8)
    ax.set_xticks([0, 1], ["shared", "personalized"])
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylabel("correlation with FedAvg's map")
    ax.set_title(f"{fm['layer']}: mean over clients, {len(seeds)} seeds", fontsize="small")
    fig.suptitle("Fig. 10 analogue: S = shared, P = personalized channel of FedFac's split layer", fontsize="small")
    return fig
