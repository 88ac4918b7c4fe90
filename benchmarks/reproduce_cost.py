"""What a reproduction costs: engine time per notebook, per kind of run and the critical path, from its run logs.

Reads ``executed/<profile>/reproduce.log`` and the run logs beside it (``runs/<notebook>.jsonl``, kept by
``pflnb reproduce``) and the records in ``results/``; see :mod:`pflnb.experiments.cost` for what each column means.
It computes nothing, so it can run after a warm reproduction too (a job's cost is then its record's wall time).
Usage, after ``make reproduce-all`` (``executed/cpu``) or ``make reproduce`` (``executed/cpu-main``)::

    python benchmarks/reproduce_cost.py executed/cpu --workers 2 [--out benchmarks/results/reproduce_cost_cpu.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pflnb.experiments.cost import cost_table, reproduction_cost  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("executed", nargs="?", default=str(ROOT / "executed" / "cpu"), help="the executed notebooks' folder")
    ap.add_argument("--results", default=str(ROOT / "results"), help="the results cache (default: results/)")
    ap.add_argument("--workers", type=int, default=2, help="the workers the reproduction ran on (default 2)")
    ap.add_argument("--out", help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    table = cost_table(reproduction_cost(args.executed, args.results, args.workers), args.workers)
    print(table)
    if args.out:
        Path(args.out).write_text(f"# Reproduction cost: {args.executed}\n\n{table}")


if __name__ == "__main__":
    main()
