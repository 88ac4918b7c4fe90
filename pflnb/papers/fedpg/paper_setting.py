"""FedPG's claims decided at the paper's own setting: Table 1 on Fashion-MNIST as the paper states it (Dir(0.1), 100
clients, 10 % online a round, batch 50, 5 local epochs, 2,000 rounds, native 28 px and all the data), run on a CPU.

The runs are the ``paper`` profile's Table 1 runs of the arms in :data:`ARMS`, tuned and seeded exactly as the whole
experiment tunes and seeds them (the same configs and cache keys; :func:`~pflnb.experiments.paper.run_experiment`'s
``arms``). Only the claims in :data:`CLAIMS` read nothing but those arms; they are decided by the one rule
(:func:`~pflnb.experiments.paper.decide`) and written to ``figures/fedpg/claims-paper.csv``, beside the cpu profile's
``claims.csv``. The other Table 1 claims need the baselines at this setting, which have not run yet.

    python -m pflnb.papers.fedpg.paper_setting [--workers 2] [--arms FedPG S-FedPG] [--no-write]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.experiments.claims import Claim, claims_table, write_claims
from pflnb.experiments.executors import Executor, Processes
from pflnb.experiments.paper import ExperimentResult, decide, run_experiment
from pflnb.papers.fedpg.paper import PAPER
from pflnb.plots import figure_dir

DATASET = "fmnist"
ARMS = ("FedPG",)  # run at the paper's setting so far
# the claims that read these arms only: FedPG's absolute G-acc, and its P-models keeping G-acc ≈ GM (S-FedPG's part
# joins when S-FedPG has run; the paper's words, "P-models of FedPG maintain the global performance", name FedPG)
CLAIMS = ("Absolute Table 1 numbers", "FedPG's P-models keep G-acc ≈ GM (protocol P1")


def run(executor: Executor | None = None, progress: bool = True, arms: tuple[str, ...] = ARMS) -> ExperimentResult:
    """The Table 1 runs of ``arms`` (default :data:`ARMS`) at the paper profile on Fashion-MNIST (cached runs are
    loaded)."""
    return run_experiment(PAPER, "table1", "paper", dataset=DATASET, arms=arms, executor=executor, progress=progress)


def claims(result: ExperimentResult) -> list[Claim]:
    """The claims of :data:`CLAIMS` decided on ``result`` by the paper's rules."""
    return decide(PAPER, {"table1": result}, only=CLAIMS)


def write(result: ExperimentResult, path: str | Path | None = None) -> pd.DataFrame:
    """Write the decided claims to ``figures/fedpg/claims-paper.csv`` (or ``path``)."""
    return write_claims(claims(result), path or figure_dir("fedpg", "paper") / "claims-paper.csv")


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), help="Table 1 arms to run (default: ARMS)")
    parser.add_argument("--no-write", action="store_true", help="run and decide, but leave claims-paper.csv as it is")
    args = parser.parse_args(argv)
    result = run(Processes(args.workers), arms=tuple(args.arms))
    table = claims_table(claims(result)) if args.no_write else write(result)
    print(table[["claim", "verdict", "ours"]].to_string(index=False))
    return table


if __name__ == "__main__":
    main()
