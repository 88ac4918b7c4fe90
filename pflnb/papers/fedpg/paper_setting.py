"""FedPG's claims decided at the paper's own setting: Table 1 on Fashion-MNIST as the paper states it (Dir(0.1), 100
clients, 10 % online a round, batch 50, 5 local epochs, 2,000 rounds, native 28 px and all the data), and App. B.1's
Pat-2 row over the same setting (2 classes a client), run on a CPU.

The runs are the ``paper`` profile's runs of the arms in :data:`ARMS` (Table 1) and :data:`PAT2_ARMS` (App. B.1,
Pat-2), tuned and seeded exactly as the whole experiments tune and seed them (the same configs and cache keys;
:func:`~pflnb.experiments.paper.run_experiment`'s ``arms`` and ``settings``). Only the claims in :data:`CLAIMS`, and
in :data:`S_FEDPG_CLAIMS` and :data:`PAT2_CLAIMS` once S-FedPG and Pat-2 have run, read nothing but those arms; they
are decided by the one rule (:func:`~pflnb.experiments.paper.decide`) and written to ``figures/fedpg/claims-paper.csv``,
beside the cpu profile's ``claims.csv``. The claims of :data:`BASELINE_CLAIMS` read Table 1's baselines: they are
decided once the paper's strongest one (:data:`STRONGEST`) ran beside FedPG and S-FedPG, each a stand-in that names
the baselines not run at this setting.

    python -m pflnb.papers.fedpg.paper_setting [--workers 2] [--arms FedPG S-FedPG] [--pat2-arms FedPG] [--no-write]
        [--checkpoint-every 100]

A run here takes minutes (FedPG) to hours (a baseline on a 2-core CPU), so each run saves resumable state every
:data:`CHECKPOINT_EVERY` rounds: the command run again resumes every run it left unfinished from its last checkpoint
(the records are the uninterrupted runs'), and a run that ends removes its checkpoint. A baseline's checkpoint is
about 1 MB; FedPG's holds its server's gradient bank (100 clients' float64 gradients, about 160 MB), so where a FedPG
run takes minutes (a GPU) ``--checkpoint-every 0`` saves its 20 writes.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.experiments.claims import Claim, claims_table, write_claims
from pflnb.experiments.executors import Executor, Processes
from pflnb.experiments.paper import ExperimentResult, decide, run_experiment
from pflnb.papers.fedpg.paper import PAPER
from pflnb.plots import figure_dir

DATASET = "fmnist"
ARMS = ("FedPG", "S-FedPG")  # run at the paper's setting so far
# the claims that read these arms only: FedPG's absolute G-acc, and FedPG's and S-FedPG's P-models keeping G-acc ≈ GM
# (one part each; the paper's words, "P-models of FedPG maintain the global performance", name FedPG)
CLAIMS = ("Absolute Table 1 numbers", "FedPG's P-models keep G-acc ≈ GM (protocol P1")
S_FEDPG_CLAIMS = ("S-FedPG's line search never raises",)  # Eq. (9) on S-FedPG's Table 1 runs, once they ran
PAT2 = ("Pat-2",)  # App. B.1's scenario over the Table 1 setting that runs here (table1_scenarios' setting)
PAT2_ARMS: tuple[str, ...] = ("FedPG",)  # its arms run at the paper's setting so far (FedPG: 15 runs, 15 minutes each)
PAT2_CLAIMS = ("App. B.1 (Pat-2, 10 % online): FedPG's P-models keep G-acc ≈ GM",)
# the claims that read Table 1's baselines, decided once FedPG, S-FedPG and STRONGEST ran; a stand-in while some of the
# paper's baselines have not run at this setting (the stand-in names them)
STRONGEST = "FedProx"  # the paper's strongest Fashion-MNIST baseline in G-acc (Table 1: .779)
NOT_DECLARED = ("FedAMP", "FedFomo", "FedROD", "SplitGP")  # the paper's Table 1 baselines our Table 1 does not declare
BASELINE_CLAIMS = (
    "Previous methods' P-models lose G-acc against their G-model",
    "FedPG / S-FedPG have the best G-acc of all methods",
    "FedPG's L-acc is below the baselines'",
)
CHECKPOINT_EVERY = 100  # rounds between a run's resumable states (of 2,000; 0: none)


def run(
    executor: Executor | None = None,
    progress: bool = True,
    arms: tuple[str, ...] = ARMS,
    pat2_arms: tuple[str, ...] = PAT2_ARMS,
    profile: str = "paper",
    checkpoint_every: int = CHECKPOINT_EVERY,
) -> dict[str, ExperimentResult]:
    """The Table 1 runs of ``arms`` (default :data:`ARMS`) and, when ``pat2_arms`` names some, App. B.1's Pat-2 runs
    of those (``table1_scenarios``), at the paper profile on Fashion-MNIST (cached runs are loaded; an unfinished run
    resumes from its checkpoint, saved every ``checkpoint_every`` rounds)."""
    kw: dict[str, Any] = dict(dataset=DATASET, executor=executor, progress=progress, checkpoint_every=checkpoint_every)
    results = {"table1": run_experiment(PAPER, "table1", profile, arms=arms, **kw)}
    if pat2_arms:
        results["table1_scenarios"] = run_experiment(PAPER, "table1_scenarios", profile, arms=pat2_arms, settings=PAT2, **kw)
    return results


def claims(results: dict[str, ExperimentResult]) -> list[Claim]:
    """The claims of :data:`CLAIMS`, of :data:`S_FEDPG_CLAIMS` when S-FedPG ran, of :data:`BASELINE_CLAIMS` when
    FedPG, S-FedPG and :data:`STRONGEST` ran (:func:`baselines_left_out` in their stand-in), and of
    :data:`PAT2_CLAIMS` when FedPG ran App. B.1's Pat-2 row, decided by the paper's rules."""
    ran = {name: set(result.table.label) for name, result in results.items()}
    with_baselines = {"FedPG", "S-FedPG", STRONGEST} <= ran["table1"]
    only = CLAIMS + (S_FEDPG_CLAIMS if "S-FedPG" in ran["table1"] else ()) + (BASELINE_CLAIMS if with_baselines else ())
    decided = decide(PAPER, results, only=only + (PAT2_CLAIMS if "FedPG" in ran.get("table1_scenarios", ()) else ()))
    left_out = baselines_left_out(results["table1"])
    return [
        dataclasses.replace(c, stand_in="; ".join(filter(None, (c.stand_in, left_out))))
        if c.claim.startswith(BASELINE_CLAIMS)
        else c
        for c in decided
    ]


def baselines_left_out(table1: ExperimentResult) -> str:
    """Which of Table 1's declared baselines ran at this setting, which did not, and the paper's others, which our
    Table 1 does not declare (:data:`NOT_DECLARED`; SplitGP is the paper's closest to FedPG in L-acc);
    '' when all ran."""
    arms = [a.label for a in PAPER.experiment(table1.experiment.name).arms if a.label not in ("FedPG", "S-FedPG")]
    ran = [a for a in arms if a in set(table1.table.label)]
    missing = [a for a in arms if a not in ran]
    if not missing:
        return ""
    return (
        f"of Table 1's baselines only {'/'.join(ran) or 'none'} ran at this setting (not run: {'/'.join(missing)}; "
        f"the paper's, not in our Table 1: {'/'.join(NOT_DECLARED)})"
    )


def write(results: dict[str, ExperimentResult], path: str | Path | None = None) -> pd.DataFrame:
    """Write the decided claims to ``figures/fedpg/claims-paper.csv`` (or ``path``)."""
    return write_claims(claims(results), path or figure_dir("fedpg", "paper") / "claims-paper.csv")


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), help="Table 1 arms to run (default: ARMS)")
    parser.add_argument("--pat2-arms", nargs="*", default=list(PAT2_ARMS), help="App. B.1 Pat-2 arms (default: PAT2_ARMS)")
    parser.add_argument("--no-write", action="store_true", help="run and decide, but leave claims-paper.csv as it is")
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=CHECKPOINT_EVERY,
        metavar="K",
        help="save each run's resumable state every K rounds (0: never)",
    )
    args = parser.parse_args(argv)
    if args.checkpoint_every < 0:
        parser.error(f"--checkpoint-every must be >= 0, got {args.checkpoint_every}")
    results = run(
        Processes(args.workers), arms=tuple(args.arms), pat2_arms=tuple(args.pat2_arms), checkpoint_every=args.checkpoint_every
    )
    table = claims_table(claims(results)) if args.no_write else write(results)
    print(table[["claim", "verdict", "ours"]].to_string(index=False))
    return table


if __name__ == "__main__":
    main()
