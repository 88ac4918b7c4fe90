"""Successive halving against the full grid, on the tuning runs the reproduction already made (#34's tuning lever).

For every tuned cell of the five papers at a profile, it reads the cached full-grid tuning runs and decides the cell
both ways: the grid's choice (what the committed outputs used) and successive halving's (η = 3, the last rung at a
third of the rounds; :mod:`pflnb.experiments.halving`). It prints each cell and writes the table, then the rounds and
estimated engine seconds each way, and each choice that differs. It trains nothing unless ``--compute-missing`` is
given: halving's grid-edge rule can ask for a candidate that the grid never ran, and that experiment is then
listed as not measured. Usage, after ``make reproduce-all`` (the cache in ``results/``)::

    python benchmarks/tuning_halving.py --profile cpu [--out benchmarks/results/tuning_halving_cpu]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pflnb.experiments.claims import markdown_table  # noqa: E402
from pflnb.experiments.executors import Executor, default_executor  # noqa: E402
from pflnb.experiments.halving import ETA, halving_report  # noqa: E402
from pflnb.experiments.jobs import Job  # noqa: E402
from pflnb.papers import PAPERS  # noqa: E402


class Counting(Executor):
    """An executor that counts the jobs it computes (those the cache lacks)."""

    def __init__(self, inner: Executor) -> None:
        self.inner, self.computed, self.desc = inner, 0, inner.desc

    def prepare(self, jobs: Sequence[Job]) -> None:
        self.inner.prepare(jobs)

    def outcomes(self, jobs: Sequence[Job], root: Path, progress: bool) -> Iterator[tuple[int, Any]]:
        self.computed += len(jobs)
        yield from self.inner.outcomes(jobs, root, progress)


def summary(table: pd.DataFrame) -> str:
    """The account in words: cells measured, choices that differ, rounds and seconds each way."""
    measured = table.dropna(subset=["same"])
    missing = table[table["same"].isna()]
    differ = measured[~measured["same"].astype(bool)]
    grid_s, half_s = measured["grid s"].sum(), measured["halving s"].sum()
    grid_r, half_r = measured["grid rounds"].sum(), measured["halving rounds"].sum()
    lines = [
        f"- {len(measured)} tuned cells measured in {measured.groupby(['paper', 'experiment']).ngroups} experiments; "
        f"{len(missing)} experiment(s) not measured (halving's grid-edge rule asks for runs the grid never made).",
        f"- Halving chooses another candidate than the grid in **{len(differ)} of {len(measured)}** cells.",
        f"- Tuning cost of the measured cells: {grid_r:,.0f} → {half_r:,.0f} rounds; about {grid_s / 60:,.1f} → "
        f"{half_s / 60:,.1f} engine minutes ({1 - half_s / grid_s:.0%} less), from the runs' recorded wall times.",
    ]
    if len(differ):
        loss = differ["val of grid choice (%)"] - differ["val of halving choice (%)"]
        higher = int((loss < 0).sum())
        lines.append(
            f"- Where the choices differ, the halving's choice, trained for the full rounds, has a best validation "
            f"accuracy {loss.mean():.2f} points lower on average: from {loss.max():.2f} lower to {-loss.min():.2f} "
            f"higher. It is higher in {higher} cell(s), where the halving's grid-edge rule reached a value the grid "
            "never tried."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--papers", nargs="*", default=list(PAPERS))
    ap.add_argument("--eta", type=int, default=ETA)
    ap.add_argument("--compute-missing", action="store_true", help="run what halving asks for and the cache lacks")
    ap.add_argument("--out", help="write <out>.csv (every cell) and <out>.md (the account and the cells that differ)")
    args = ap.parse_args(argv)
    papers = [importlib.import_module(f"pflnb.papers.{name}.paper").PAPER for name in args.papers]
    executor = Counting(default_executor()) if args.compute_missing else None
    table = halving_report(papers, args.profile, eta=args.eta, executor=executor, progress=args.compute_missing)
    computed = f"; it ran {executor.computed} tuning run(s) the cache lacked" if executor is not None else ""
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 48):
        print(table.to_string(index=False))
    text = summary(table)
    print(text)
    if args.out:
        out = Path(args.out)
        table.to_csv(out.with_suffix(".csv"), index=False)
        differ = table[table["same"].notna() & ~table["same"].astype(bool)]
        cols = ["paper", "experiment", "cell", "grid choice", "halving choice"]
        cols += ["val of grid choice (%)", "val of halving choice (%)"]
        body = [
            f"# Successive halving vs the full grid: profile {args.profile}, η = {args.eta}",
            "",
            f"Made by `python benchmarks/tuning_halving.py {' '.join(sys.argv[1:] if argv is None else argv)}` from "
            f"the cached tuning runs of a reproduction{computed}. Each cell's grid choice is what the committed "
            f"outputs used. Every cell: `{out.with_suffix('.csv').name}`.",
            "",
            text,
            "",
            "## The cells where the choices differ",
            "",
            markdown_table(differ[cols]) if len(differ) else "None.",
            "",
        ]
        out.with_suffix(".md").write_text("\n".join(body))


if __name__ == "__main__":
    main()
