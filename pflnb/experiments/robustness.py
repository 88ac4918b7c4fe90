"""``make robustness``: which verdicts survive a last-bit perturbation of the arithmetic?

The committed outputs are computed under CPU kernels pinned to AVX2 (:mod:`pflnb.kernels`). Another instruction set
changes only the last bits of each operation, but training amplifies them into other accuracies, so a verdict whose
interval ends near a bound can flip. This module reruns the main scope's notebooks under a second kernel setting
(``generic``: torch's kernels on their non-vectorised path), the tuning seeds held at the pinned records (so the
choices made on them stay the same and only the verdict seeds are recomputed), and compares each claim's verdict with
the committed one: a claim whose verdict category changed is **fragile**, one that kept it **stable**.

The table goes to ``figures/robustness.csv`` (committed); :func:`pflnb.experiments.paper.decide` reads it, so the
claims CSVs, the site and the ledger mark fragile claims and count them once the notebooks run again.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from pflnb import kernels
from pflnb.experiments import claims as C
from pflnb.experiments.reproduce import execute

PERTURBED = "generic"  # the second kernel setting
COLUMNS = ["paper", "claim", "pinned", "perturbed", "fragile", "pinned verdict", "perturbed verdict"]


def perturbed_environment(held_seeds: list[int]) -> dict[str, str]:
    """The variables a perturbed reproduction runs under: the ``generic`` kernels, the tuning seeds held."""
    return {kernels.ENV: PERTURBED, kernels.HOLD_ENV: " ".join(str(s) for s in held_seeds)}


def compare_verdicts(pinned: Path, perturbed: Path) -> pd.DataFrame:
    """One row per claim decided in both ledgers (``figures`` folders): its verdict category under the pinned and the
    perturbed kernels and 'fragile' (they differ) or 'stable'; claims the perturbed run did not decide (not run in the
    main scope) are left out."""
    old, new = C.ledger(pinned), C.ledger(perturbed)
    new = new[new.category != C.NOT_RUN]
    merged = new.merge(old, on=["paper", "claim"], how="left", suffixes=("_perturbed", "_pinned"))
    missing = merged[merged.category_pinned.isna()]
    if len(missing):
        raise ValueError(f"claims of the perturbed run missing from the pinned ledger: {missing.claim.tolist()[:5]}")
    keys = {name: key for key, name in C.PAPERS.items()}
    return pd.DataFrame(
        {
            "paper": merged.paper.map(keys),
            "claim": merged.claim,
            "pinned": merged.category_pinned,
            "perturbed": merged.category_perturbed,
            "fragile": [C.FRAGILE if a != b else "stable" for a, b in zip(merged.category_pinned, merged.category_perturbed)],
            "pinned verdict": merged.ours_pinned,
            "perturbed verdict": merged.ours_perturbed,
        },
        columns=COLUMNS,
    )


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper: claims checked, fragile, stable."""
    t = table.assign(is_fragile=table.fragile == C.FRAGILE)
    out = t.groupby("paper", sort=False).agg(checked=("claim", "size"), fragile=("is_fragile", "sum"))
    out["stable"] = out.checked - out.fragile
    return out.reset_index()


def run(profile: str, out: Path, notebooks: list[Path], held_seeds: list[int], progress_bar: bool = True) -> list:
    """Execute ``notebooks`` (main scope) at ``profile`` into ``out`` under the perturbed kernels, their figures and
    claims into ``out/figures``; return the notebooks' results (:func:`pflnb.experiments.reproduce.execute`)."""
    saved = {k: os.environ.get(k) for k in (kernels.ENV, kernels.HOLD_ENV, "PFLNB_FIGURES")}
    os.environ.update(perturbed_environment(held_seeds))
    os.environ["PFLNB_FIGURES"] = str((out / "figures").resolve())
    try:  # the notebook kernels and their workers inherit the variables (this process keeps its pinned kernels)
        return execute(notebooks, profile, out, scope="main", progress_bar=progress_bar)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
