"""Successive halving measured on the runs that the full-grid tuning already made. This is a lever for a faster
reproduction; nothing here is used by the notebooks yet.

The full-grid tuning (:func:`~pflnb.experiments.paper.tune_experiment`) trains every candidate of a cell (setting or
grid point, arm) for the experiment's whole budget of ``R`` rounds. It chooses the best mean validation accuracy.
Successive halving (Jamieson & Talwalkar 2016; Li et al. 2018, Hyperband's inner loop) trains every candidate for a
short budget, keeps the best ``1/η`` of them, trains those for longer, and so on until one is left. Its cost is a
fraction of the grid's, but the choice is made on shorter runs, and a short horizon can favour another candidate.

**The budget rule, one for every cell.** A cell has ``n`` candidates, and ``K = ⌈log_η n⌉``. Rung ``k``
(``k = 0 … K−1``) runs its survivors for ``R / η^(K−k)`` rounds, rounded up to a multiple of the run's evaluation
interval (and at most ``R``). It keeps the best ``⌈m/η⌉`` of its ``m`` candidates, on the best mean validation
accuracy so far (the first candidate on ties, as the grid does). So the last rung runs ``R/η`` rounds: a single
survivor needs no further comparison. Under the grid-edge rule, a cell's choice at each pass is the halving of every
candidate tried so far.

**Measured without training.** A run's first ``b`` rounds do not depend on how many rounds follow: the per-round
learning-rate decay, the clients' sampling and the methods' schedules read the round, never ``R``
(``tests/test_halving.py`` checks this on a run cut short). The run also evaluates at every multiple of its
interval. So a run of ``b`` rounds has the same validation curve as the full run up to round ``b``, and
:func:`score_at` reads it from the full record. A run that diverged at a round after ``b`` is read up to ``b`` too;
one that diverged by round ``b`` scores −∞, as in the grid.

:func:`halving_report` decides every tuned cell both ways on the same cached records. By default it computes nothing
(:class:`CacheOnly`): an experiment where the halving's grid-edge rule asks for a candidate that the grid never ran is
reported, not run; given an executor, it runs those candidates. Cost: each (candidate,
budget) is served by the longest run of that candidate so far when it is at least that long, and is otherwise a
new run of ``b`` rounds from round 1 (:func:`runs_needed`; no checkpoint is resumed). A run's seconds are estimated
as the full run's wall time × ``b/R``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pflnb.experiments.executors import Executor
from pflnb.experiments.jobs import Job
from pflnb.experiments.paper import Paper, best_on_validation, tune_experiment, tuned_experiments, tuning_columns, tuning_score

ETA = 3  # keep the best third at each rung (Hyperband's default η)


def rung_budgets(n: int, rounds: int, eta: int = ETA, every: int = 1) -> list[int]:
    """The rounds each rung runs for ``n`` candidates of an ``rounds``-round budget evaluated every ``every`` rounds
    (empty for one candidate: there is nothing to choose)."""
    if n < 1 or rounds < 1 or eta < 2 or every < 1:
        raise ValueError(f"need n >= 1, rounds >= 1, eta >= 2, every >= 1; got {n}, {rounds}, {eta}, {every}")
    k = 0
    while eta**k < n:
        k += 1
    budgets = []
    for j in range(k, 0, -1):  # R/η^K, …, R/η
        b = math.ceil(rounds / eta**j / every) * every
        budgets.append(min(max(b, every), rounds))
    return budgets


def score_at(record: Mapping[str, Any], budget: int) -> float:
    """A tuning run's score had it run ``budget`` rounds: the best mean validation accuracy over its evaluations up
    to that round; −∞ if it diverged by then."""
    diverged = record.get("divergence")
    if diverged is not None and int(diverged["round"]) <= budget:
        return -math.inf
    means = [float(np.mean(e["val_acc"])) for e in record["evals"] if e["round"] <= budget]
    if not means:
        raise ValueError(f"no evaluation up to round {budget} in a run of {record['config']['rounds']} rounds")
    return max(means)


@dataclass
class Grid:
    """The full grid's rule as a chooser: the best mean :func:`~pflnb.experiments.paper.tuning_score` (the first on
    ties). ``seen`` keeps each cell's candidates' records as last chosen among."""

    seen: dict[tuple[Any, ...], Sequence[Sequence[Mapping[str, Any]]]] = field(default_factory=dict)

    def __call__(self, cell: tuple[Any, ...], candidates: Sequence[Sequence[Mapping[str, Any]]]) -> int:
        self.seen[cell] = candidates
        return best_on_validation([float(np.mean([tuning_score(r) for r in rs])) for rs in candidates])


@dataclass
class Halving(Grid):
    """A chooser for :func:`~pflnb.experiments.paper.tune_experiment`: successive halving of a cell's candidates (the
    module's budget rule). ``runs`` keeps, per cell and candidate, the budgets it was scored at, in order."""

    eta: int = ETA
    runs: dict[tuple[Any, ...], dict[int, list[int]]] = field(default_factory=dict)

    def __call__(self, cell: tuple[Any, ...], candidates: Sequence[Sequence[Mapping[str, Any]]]) -> int:
        self.seen[cell] = candidates
        config = candidates[0][0]["config"]
        rounds, every = int(config["rounds"]), int(config.get("eval_every", 1))
        alive = list(range(len(candidates)))
        for budget in rung_budgets(len(candidates), rounds, self.eta, every):
            scores = [float(np.mean([score_at(r, budget) for r in candidates[k]])) for k in alive]
            for k in alive:
                self.runs.setdefault(cell, {}).setdefault(k, []).append(budget)
            order = sorted(range(len(alive)), key=lambda i: (-scores[i], i))  # the first on ties, as the grid
            alive = sorted(alive[i] for i in order[: max(1, math.ceil(len(alive) / self.eta))])
        return alive[0]


class NotInCache(RuntimeError):
    """The halving's grid-edge rule asked for a candidate that the full grid never ran."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = list(jobs)
        super().__init__(f"{len(self.jobs)} tuning run(s) not in the cache")


class CacheOnly(Executor):
    """Loads what the cache holds and computes nothing: a job it would have to run raises :class:`NotInCache`."""

    desc = "cached runs"

    def outcomes(self, jobs: Sequence[Job], root: Path, progress: bool, rounds: Any = None) -> Iterator[tuple[int, Any]]:
        if jobs:
            raise NotInCache(jobs)
        yield from ()


def _words(table: pd.DataFrame, cells: list[str]) -> dict[tuple[Any, ...], list[str]]:
    """Cell → each candidate's tuned values in words ('lr=0.01, mu=0.1'), in the order tried."""
    _, values = tuning_columns(table)
    out: dict[tuple[Any, ...], list[str]] = {}
    for _, row in table.drop_duplicates([*cells, "candidate"]).sort_values("candidate", kind="stable").iterrows():
        words = ", ".join(f"{v[6:]}={row[v]:g}" for v in values if pd.notna(row[v]))
        out.setdefault(tuple(row[c] for c in cells), []).append(words)
    return out


def _chosen(table: pd.DataFrame, cells: list[str]) -> dict[tuple[Any, ...], int]:
    chosen = table[table.chosen].drop_duplicates(cells)
    return {tuple(row[c] for c in cells): int(row["candidate"]) for _, row in chosen.iterrows()}


def runs_needed(budgets: Sequence[int]) -> list[int]:
    """The runs that scoring a candidate at ``budgets`` (in the order asked) takes: a run of ``b`` rounds also gives
    every shorter budget's score (its first rounds), and a longer budget is a new run from round 1."""
    out: list[int] = []
    for b in budgets:
        if not out or b > max(out):
            out.append(b)
    return out


def _cost(candidates: Sequence[Sequence[Mapping[str, Any]]], budgets: Mapping[int, Sequence[int]] | None) -> tuple[int, float]:
    """(rounds, estimated seconds) of the runs that scoring each candidate's records at its ``budgets`` takes (None:
    one run of its full rounds)."""
    rounds, seconds = 0, 0.0
    for k, records in enumerate(candidates):
        for r in records:
            full = int(r["config"]["rounds"])
            for b in [full] if budgets is None else runs_needed(budgets.get(k, ())):
                rounds += b
                seconds += float(r.get("wall_time_s", 0.0)) * b / full
    return rounds, seconds


COLUMNS = [
    "paper",
    "experiment",
    "cell",
    "candidates (grid)",
    "grid choice",
    "halving choice",
    "same",
    "val of grid choice (%)",
    "val of halving choice (%)",
    "grid rounds",
    "halving rounds",
    "grid s",
    "halving s",
]


def halving_report(
    papers: Sequence[Paper], profile: str, eta: int = ETA, executor: Executor | None = None, progress: bool = False
) -> pd.DataFrame:
    """One row per tuned cell of ``papers`` at ``profile``: the full grid's choice and the halving's, both read
    from the same cached tuning runs (``executor``: :class:`CacheOnly` unless given), the full-budget validation
    accuracy of each choice, and the rounds and estimated seconds each way (see the module's docstring). An
    experiment whose halving needs a run the grid never made gets one row saying so."""
    executor = CacheOnly() if executor is None else executor
    rows: list[dict[str, Any]] = []
    for paper, experiment, committed in tuned_experiments(papers, profile, executor, progress):
        grid = Grid()
        table, _ = tune_experiment(experiment, profile, executor, progress, chooser=grid)
        if not table.chosen.equals(committed.chosen):  # the chooser restates the grid's rule; it must agree
            raise AssertionError(f"{paper.name} {experiment.name}: the Grid chooser disagrees with the tuning")
        halving = Halving(eta=eta)
        where = {"paper": paper.name, "experiment": experiment.name}
        try:
            halved, _ = tune_experiment(experiment, profile, executor, progress, chooser=halving)
        except NotInCache as err:
            rows.append({**where, "cell": f"halving needs {len(err.jobs)} run(s) the grid did not make"})
            continue
        cells, _ = tuning_columns(table)
        words, words_h = _words(table, cells), _words(halved, cells)
        ours, theirs = _chosen(table, cells), _chosen(halved, cells)
        val = table.groupby([*cells, "candidate"], sort=False)["best_val_acc"].mean()
        val_h = halved.groupby([*cells, "candidate"], sort=False)["best_val_acc"].mean()
        for cell, tried in words.items():
            g, h = ours[cell], theirs[cell]
            grid_rounds, grid_s = _cost(grid.seen[cell], None)
            half_rounds, half_s = _cost(halving.seen[cell], halving.runs.get(cell, {}))
            rows.append(
                {
                    **where,
                    "cell": " · ".join(str(v) for v in cell),
                    "candidates (grid)": len(tried),
                    "grid choice": tried[g],
                    "halving choice": words_h[cell][h],
                    "same": tried[g] == words_h[cell][h],
                    "val of grid choice (%)": round(100 * float(val.loc[(*cell, g)]), 2),
                    "val of halving choice (%)": round(100 * float(val_h.loc[(*cell, h)]), 2),
                    "grid rounds": grid_rounds,
                    "halving rounds": half_rounds,
                    "grid s": round(grid_s, 1),
                    "halving s": round(half_s, 1),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
