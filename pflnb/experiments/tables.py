"""Tidy pandas tables of run records: summaries, per-client accuracies, learning curves.

Diverged runs (records with ``status`` "diverged", see :func:`pflnb.experiments.run.run`) appear with a boolean
``diverged`` column set and NaN accuracies; :func:`mean_std` writes "diverged" instead of a number for any group
that holds one, so no table shows a diverged run as an accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd


def _label(record: dict[str, Any], label_by: Sequence[str]) -> dict[str, Any]:
    cfg = record["config"]
    out = {"method": cfg["method"], "dataset": cfg["dataset"], "seed": cfg["seed"]}
    for name in label_by:
        out[name] = cfg["method_params"].get(name, cfg.get(name)) if name not in out else out[name]
    return out


def _diverged(record: dict[str, Any]) -> bool:
    return record.get("status") == "diverged"


def summary_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run: test accuracy at the best mean-validation round, last round, worst client; ``diverged``
    (bool) marks runs that diverged, whose accuracies are NaN and ``diverged_round`` the round it happened."""
    rows = []
    for r in records:
        s = {} if _diverged(r) else r["summary"]
        rows.append(
            {
                **_label(r, label_by),
                "test_acc": s.get("test_acc", np.nan),
                "best_val_acc": s.get("best_val_acc", np.nan),
                "last_test_acc": s.get("last_test_acc", np.nan),
                "worst_client": s.get("test_acc_worst", np.nan),
                "client_std": s.get("test_acc_client_std", np.nan),
                "best_round": s.get("best_round", np.nan),
                "wall_time_s": r.get("wall_time_s", np.nan),
                "diverged": _diverged(r),
                "diverged_round": r["divergence"]["round"] if _diverged(r) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def client_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (run, client): the client's test accuracy at the run's best mean-validation round (NaN, with
    ``diverged`` True, for a diverged run)."""
    rows = []
    for r in records:
        accs = [np.nan] * len(r["clients"]) if _diverged(r) else r["summary"]["test_acc_clients"]
        for name, domain, acc in zip(r["clients"], r["domains"], accs):
            rows.append({**_label(r, label_by), "client": name, "domain": domain, "test_acc": acc, "diverged": _diverged(r)})
    return pd.DataFrame(rows)


def curve_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (run, evaluation round): client-mean validation and test accuracy (a diverged run keeps the
    evaluations before it diverged, with ``diverged`` True)."""
    rows = []
    for r in records:
        for e in r["evals"]:
            rows.append(
                {
                    **_label(r, label_by),
                    "round": e["round"],
                    "val_acc": float(np.mean(np.asarray(e["val_acc"], dtype=float))),
                    "test_acc": float(np.mean(np.asarray(e["test_acc"], dtype=float))),
                    "test_loss": float(np.mean(np.asarray(e["test_loss"], dtype=float))),
                    "diverged": _diverged(r),
                }
            )
    return pd.DataFrame(rows)


DIVERGED = "diverged"


def mean_std(
    df: pd.DataFrame, by: Sequence[str] = ("method",), metrics: Sequence[str] = ("test_acc",), scale: float = 100.0
) -> pd.DataFrame:
    """Mean ± sample std (ddof=1; 0 for one seed) over seeds of each metric, in %, grouped by ``by``.

    A group holding a diverged run (column ``diverged`` of :func:`summary_table`) shows "diverged (k/n)" and a NaN
    mean instead of a number (k of the group's n runs diverged); the output's ``diverged`` column (bool) marks them."""
    df = df.copy()
    if "diverged" not in df:
        df["diverged"] = False
    df["diverged"] = df["diverged"].fillna(False).astype(bool)
    g = df.groupby(list(by), sort=False)
    n_diverged = g["diverged"].sum().astype(int)
    size = g.size()
    out = pd.DataFrame(index=size.index)
    for m in metrics:
        mean, std = g[m].mean() * scale, g[m].std(ddof=1).fillna(0.0) * scale
        mean = mean.where(n_diverged == 0)
        out[m] = [f"{DIVERGED} ({k}/{n})" if k else f"{a:.2f} ± {b:.2f}" for a, b, k, n in zip(mean, std, n_diverged, size)]
        out[m + "_mean"] = mean
    out["seeds"] = size
    out["diverged"] = n_diverged > 0
    return out.reset_index()
