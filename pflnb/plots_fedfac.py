"""FedFac figures built on :mod:`pflnb.plots`'s style: the motivating experiment (Figs. 1–2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

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
