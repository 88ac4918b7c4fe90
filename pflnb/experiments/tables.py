"""Tidy pandas tables of run records: summaries, per-client accuracies, learning curves."""

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


def summary_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run: test accuracy at the best mean-validation round, last round, worst client."""
    rows = []
    for r in records:
        s = r["summary"]
        rows.append(
            {
                **_label(r, label_by),
                "test_acc": s["test_acc"],
                "last_test_acc": s["last_test_acc"],
                "worst_client": s["test_acc_worst"],
                "client_std": s["test_acc_client_std"],
                "best_round": s["best_round"],
                "wall_time_s": r.get("wall_time_s", np.nan),
            }
        )
    return pd.DataFrame(rows)


def client_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (run, client): the client's test accuracy at the run's best mean-validation round."""
    rows = []
    for r in records:
        for name, domain, acc in zip(r["clients"], r["domains"], r["summary"]["test_acc_clients"]):
            rows.append({**_label(r, label_by), "client": name, "domain": domain, "test_acc": acc})
    return pd.DataFrame(rows)


def curve_table(records: Iterable[dict[str, Any]], label_by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (run, evaluation round): client-mean validation and test accuracy."""
    rows = []
    for r in records:
        for e in r["evals"]:
            rows.append(
                {
                    **_label(r, label_by),
                    "round": e["round"],
                    "val_acc": float(np.mean(e["val_acc"])),
                    "test_acc": float(np.mean(e["test_acc"])),
                    "test_loss": float(np.mean(e["test_loss"])),
                }
            )
    return pd.DataFrame(rows)


def mean_std(
    df: pd.DataFrame, by: Sequence[str] = ("method",), metrics: Sequence[str] = ("test_acc",), scale: float = 100.0
) -> pd.DataFrame:
    """Mean ± sample std (ddof=1; 0 for one seed) over seeds of each metric, in %, grouped by ``by``."""
    g = df.groupby(list(by), sort=False)
    out = pd.DataFrame(index=g.size().index)
    for m in metrics:
        mean, std = g[m].mean() * scale, g[m].std(ddof=1).fillna(0.0) * scale
        out[m] = [f"{a:.2f} ± {b:.2f}" for a, b in zip(mean, std)]
        out[m + "_mean"] = mean
    out["seeds"] = g.size()
    return out.reset_index()
