"""FedPG's claims decided at the paper's own setting: Table 1 on Fashion-MNIST as the paper states it (Dir(0.1), 100
clients, 10 % online a round, batch 50, 5 local epochs, 2,000 rounds, native 28 px and all the data), run on a CPU.

The runs are the ``paper`` profile's Table 1 runs of the arms in :data:`ARMS`, tuned and seeded exactly as the whole
experiment tunes and seeds them (the same configs and cache keys; :func:`~pflnb.experiments.paper.run_experiment`'s
``arms``). Only the claims in :data:`CLAIMS` read nothing but those arms; they are decided by the one rule
(:func:`~pflnb.experiments.paper.decide`) and written to ``figures/fedpg/claims-paper.csv``, beside the cpu profile's
``claims.csv``. The other Table 1 claims need the baselines at this setting, which have not run yet.

    python -m pflnb.papers.fedpg.paper_setting [--workers 2]     # about 9 runs of 8.5 CPU-minutes each
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.experiments.claims import Claim, write_claims
from pflnb.experiments.executors import Executor, Processes
from pflnb.experiments.paper import ExperimentResult, decide, run_experiment
from pflnb.papers.fedpg.paper import PAPER
from pflnb.plots import figure_dir

DATASET = "fmnist"
ARMS = ("FedPG",)  # run at the paper's setting so far
CLAIMS = ("Absolute Table 1 numbers",)  # the claims that read these arms only


def run(executor: Executor | None = None, progress: bool = True) -> ExperimentResult:
    """The Table 1 runs of :data:`ARMS` at the paper profile on Fashion-MNIST (cached runs are loaded)."""
    return run_experiment(PAPER, "table1", "paper", dataset=DATASET, arms=ARMS, executor=executor, progress=progress)


def claims(result: ExperimentResult) -> list[Claim]:
    """The claims of :data:`CLAIMS` decided on ``result`` by the paper's rules."""
    return decide(PAPER, {"table1": result}, only=CLAIMS)


def write(result: ExperimentResult, path: str | Path | None = None) -> pd.DataFrame:
    """Write the decided claims to ``figures/fedpg/claims-paper.csv`` (or ``path``)."""
    return write_claims(claims(result), path or figure_dir("fedpg", "paper") / "claims-paper.csv")


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    result = run(Processes(args.workers))
    table = write(result)
    print(table[["claim", "verdict", "ours"]].to_string(index=False))
    return table


if __name__ == "__main__":
    main()
