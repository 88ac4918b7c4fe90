"""LG-Mix's claims decided at the paper's own setting: the cost of Eq. (5)'s feature trace against the full NTK trace,
timed on the paper's DigitModel (App. D.1: three 5×5 convolutions and two dense layers with BN, 512 features, 14.2 M
parameters) at its 28 px inputs, with n up to 1,024 samples, past its m = 512 features (§3.3: "the number of samples
is typically much larger than the last-layer feature dimension (e.g., 256 or 512)"); the paper states no n. Both
costs grow linearly in n, so the ratio changes little with it.

The timing is :func:`~pflnb.papers.lgmix.checks.trace_cost` at the ``paper`` profile's sizes
(:func:`~pflnb.papers.lgmix.checks.theory_sizes`), the same call the notebook makes at that profile, on random inputs
(the cost does not depend on the pixels). The claim of :data:`CLAIMS` is decided by the one rule
(:func:`~pflnb.experiments.paper.decide`) and written to ``figures/lgmix/claims-paper.csv``, beside the cpu profile's
``claims.csv``; the times go to ``figures/lgmix/timing-paper.csv``. A wall-clock ratio measured in one run on this
machine: time it on a quiet machine.

    python -m pflnb.papers.lgmix.paper_setting [--threads 1] [--no-write]   # about 7 minutes on one CPU thread
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from pflnb.experiments.claims import Claim, claims_table, write_claims, write_timing
from pflnb.experiments.paper import decide
from pflnb.papers.lgmix.checks import theory_sizes, trace_cost
from pflnb.papers.lgmix.paper import PAPER
from pflnb.plots import figure_dir

PROFILE = "paper"
CLAIMS = ("The feature trace (Eq. 5) is far cheaper than the full NTK trace (§3.3)",)


def run() -> dict[str, Any]:
    """The results the claim reads: ``cost`` (milliseconds per trace by n) and ``profile``."""
    sizes = theory_sizes(PROFILE)
    return {"cost": trace_cost(sizes["cost_sizes"], **sizes["cost_model"]), "profile": PROFILE}


def claims(results: dict[str, Any]) -> list[Claim]:
    """The claims of :data:`CLAIMS` decided on ``results`` by the paper's rules."""
    return decide(PAPER, results, only=CLAIMS)


def write(results: dict[str, Any], folder: str | Path | None = None) -> pd.DataFrame:
    """Write the decided claims to ``claims-paper.csv`` and the times to ``timing-paper.csv`` in ``folder`` (default
    ``figures/lgmix``)."""
    folder = Path(folder) if folder is not None else figure_dir("lgmix", PROFILE)
    write_timing(results["cost"], folder / "timing-paper.csv")
    return write_claims(claims(results), folder / "claims-paper.csv")


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads the traces run with (default 1)")
    parser.add_argument("--no-write", action="store_true", help="time and decide, but write nothing")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = run()
    print(results["cost"].round(1).to_string())
    table = claims_table(claims(results)) if args.no_write else write(results)
    print(table[["claim", "verdict", "ours"]].to_string(index=False))
    return table


if __name__ == "__main__":
    main()
