"""One plotting style for every notebook: seaborn on matplotlib, figures saved as PNG and PDF."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

_CHECKOUT = Path(__file__).resolve().parents[1]
# figures/ of the checkout; for an installed wheel, figures/ in the working folder (a notebook's own folder in Jupyter)
FIGURES = (_CHECKOUT if (_CHECKOUT / "pyproject.toml").exists() else Path.cwd()) / "figures"


def set_style() -> None:
    """Apply the project's plotting style (seaborn whitegrid, colourblind palette, readable sizes)."""
    sns.set_theme(style="whitegrid", palette="colorblind", context="notebook")
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def figures_root() -> Path | None:
    """``$PFLNB_FIGURES`` as a folder when set (every profile's figures then go under it), else None."""
    env = os.environ.get("PFLNB_FIGURES")
    return Path(env) if env else None


@contextlib.contextmanager
def seeded_numpy(seed: int = 0) -> Iterator[None]:
    """Run a plotting call with numpy's global generator seeded (seaborn's strip-plot jitter draws from it), so that
    a figure is the same on every run; the caller's generator state is restored afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def figure_dir(paper: str, profile: str) -> Path:
    """Where a notebook's figures go: ``$PFLNB_FIGURES/<paper>`` when that variable is set (any profile);
    otherwise figures/<paper> for the cpu and paper profiles, and results/smoke/figures/<paper> for smoke runs
    so that CI never overwrites the committed figures."""
    root = figures_root()
    if root is not None:
        return root / paper
    if profile == "smoke":
        return FIGURES.parent / "results" / "smoke" / "figures" / paper
    return FIGURES / paper


def save(fig: plt.Figure, name: str, folder: str | Path) -> Path:
    """Save ``fig`` as ``<folder>/<name>.png`` and ``.pdf`` (folder relative to ``$PFLNB_FIGURES`` or figures/ unless
    absolute), without timestamps or version stamps, so that re-running a notebook on the same results leaves the
    files unchanged."""
    folder = Path(folder)
    if not folder.is_absolute():
        folder = (figures_root() or FIGURES) / folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, metadata={"Software": None})
    fig.savefig(folder / f"{name}.pdf", metadata={"CreationDate": None, "Creator": None, "Producer": None})
    return path


def learning_curves(
    curves: pd.DataFrame, metric: str = "test_acc", hue: str = "method", ax: plt.Axes | None = None, title: str = ""
) -> plt.Axes:
    """Client-mean ``metric`` against round, mean over seeds with a ±1 std band, one line per ``hue``."""
    set_style()
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4))
    df = curves.copy()
    df[metric] = 100 * df[metric] if df[metric].max() <= 1.0 else df[metric]
    sns.lineplot(data=df, x="round", y=metric, hue=hue, errorbar="sd", marker="o", markersize=3, ax=ax)
    ax.set_xlabel("round")
    ax.set_ylabel(metric.replace("_", " ") + (" (%)" if "acc" in metric else ""))
    ax.set_title(title)
    ax.legend(title=hue, fontsize="small")
    return ax


def client_bars(
    clients: pd.DataFrame, x: str = "client", hue: str = "method", ax: plt.Axes | None = None, title: str = ""
) -> plt.Axes:
    """Per-client test accuracy bars (mean over seeds, std as error bars), grouped by ``hue``."""
    set_style()
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.4, 0.9 * clients[x].nunique() + 2), 4))
    df = clients.assign(test_acc=100 * clients["test_acc"])
    sns.barplot(data=df, x=x, y="test_acc", hue=hue, errorbar="sd", ax=ax)
    ax.set_ylabel("test accuracy (%)")
    ax.set_xlabel(x)
    ax.set_title(title)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), title=hue, fontsize="small", frameon=False)
    return ax


def image_grid(images: Mapping[str, np.ndarray], title: str = "") -> plt.Figure:
    """A grid with one row of sample images (N, C, H, W in [0, 1]) per named group (e.g. domain)."""
    set_style()
    n_rows = len(images)
    n_cols = max(len(v) for v in images.values())
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.1 * n_cols + 1, 1.15 * n_rows), squeeze=False)
    for r, (name, imgs) in enumerate(images.items()):
        for c in range(n_cols):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if c < len(imgs):
                img = np.clip(np.transpose(imgs[c], (1, 2, 0)), 0, 1)
                ax.imshow(img.squeeze(-1) if img.shape[-1] == 1 else img, cmap="gray", interpolation="nearest")
            else:
                ax.axis("off")
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title)
    return fig


def method_bars(summary: pd.DataFrame, metric: str = "test_acc", col: str = "setting", title: str = "") -> plt.Figure:
    """Horizontal bars of ``metric`` per method (mean over seeds, ±1 std), one panel per ``col`` value,
    with the worst client's accuracy as a black tick when the column ``worst_client`` is present."""
    set_style()
    panels = list(dict.fromkeys(summary[col])) if col in summary else [None]
    n_methods = summary["method"].nunique()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 0.32 * n_methods + 1.6), squeeze=False, sharey=True)
    order = list(dict.fromkeys(summary["method"]))
    for ax, panel in zip(axes[0], panels):
        df = summary if panel is None else summary[summary[col] == panel]
        g = df.groupby("method")
        mean = (100 * g[metric].mean()).reindex(order)
        std = (100 * g[metric].std(ddof=1).fillna(0.0)).reindex(order)
        ax.barh(order, mean.values, xerr=std.values, color=sns.color_palette("colorblind", 1)[0], alpha=0.85, capsize=2)
        if "worst_client" in df:
            worst = (100 * g["worst_client"].mean()).reindex(order)
            ax.plot(worst.values, order, "k|", markersize=10, label="worst client")
            ax.legend(loc="lower right", fontsize="small")
        ax.set_xlabel(f"{metric.replace('_', ' ')} (%)")
        ax.set_title(str(panel) if panel is not None else title)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
    if title and panels != [None]:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
