"""A new method against a paper's shipped baselines: one more arm in a declared experiment, tuned and seeded like the
others, with only its own runs computed.

:func:`with_arm` returns a copy of a :class:`~pflnb.experiments.paper.Paper` whose experiment also runs a new
:class:`~pflnb.experiments.paper.Arm`: the experiment's own :class:`~pflnb.experiments.paper.Tune` tunes it (the same
grid, tuning seeds and grid-edge rule as every other arm) and it runs on the experiment's verdict seeds, through the
experiment's own job. The other arms' runs are the same runs as before (the same configs, so the same cache keys).

:func:`compare_new_arm` runs that experiment with :func:`~pflnb.experiments.paper.run_experiment`. Every run whose
record is in the results cache (``$PFLNB_RESULTS``, filled from the shipped records by ``pflnb records import``) is
loaded; only the runs missing from it are computed, which, once the baselines' records are in the cache, are the new
arm's tuning runs and verdict runs. It returns a :class:`NewArm`: the experiment's result, a per-arm summary (mean ± sd
of the test accuracy over the verdict seeds, and each arm's tuned choice) and the run log of the call (every job it
loaded or computed, from :func:`~pflnb.experiments.executors.execute`'s run log: :func:`logged_runs`), so that the
number of runs computed and loaded is read from what ran, not estimated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.algorithms.registry import get_algorithm_class
from pflnb.experiments.cache import RUN_LOG_ENV
from pflnb.experiments.executors import Executor
from pflnb.experiments.paper import Arm, ExperimentResult, Paper, run_experiment
from pflnb.experiments.tables import mean_std

_CELLS = ("setting", "dataset")  # a run's labels beside its arm that a summary keeps apart (as tuning does)


def with_arm(
    paper: Paper,
    experiment: str,
    arm: Arm,
    keys: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
) -> Paper:
    """A copy of ``paper`` whose experiment ``experiment`` also runs ``arm``, after the declared arms: tuned by the
    experiment's own :class:`~pflnb.experiments.paper.Tune` (its grid, tuning seeds and grid-edge rule; its
    ``methods`` keys where ``arm.method`` is named there), on the experiment's verdict seeds, in every setting, at every
    profile. ``keys``: the arm's own key hyperparameters to tune as well ({method parameter: {profile: values}}, as
    ``Tune.keys``). The declared arms' runs are unchanged (the same configs, so the same cache keys).

    Raises KeyError for an unknown experiment, ValueError for a label the experiment already has, a method that is
    not registered, parameters the method refuses, or ``keys`` for an experiment that is not tuned."""
    exp = paper.experiment(experiment)
    labels = [a.label for a in exp.arms]
    if arm.label in labels:
        raise ValueError(f"experiment {experiment!r} already has an arm {arm.label!r}; give the new arm another label ({labels})")
    try:
        cls = get_algorithm_class(arm.method)
    except ValueError as err:
        raise ValueError(
            f"arm {arm.label!r}: {err}. Register it first (@register or variant(...) in pflnb.algorithms.registry)"
        ) from None
    for profile in ("", *arm.at):
        cls.from_dict(arm.params_at(profile))  # parameters the method refuses fail here, before any run
    tune = exp.tune
    if keys:
        if tune is None:
            raise ValueError(f"experiment {experiment!r} is not tuned, so arm {arm.label!r} has no keys to tune")
        tune = dataclasses.replace(tune, keys={**tune.keys, arm.label: dict(keys)})
    settings = {
        profile: tuple(s if s.arms is None else dataclasses.replace(s, arms=(*s.arms, arm.label)) for s in ss)
        for profile, ss in exp.settings.items()
    }
    extended = dataclasses.replace(exp, arms=(*exp.arms, arm), tune=tune, settings=settings)
    experiments = tuple(extended if e.name == experiment else e for e in paper.experiments)
    return dataclasses.replace(paper, experiments=experiments)


@contextlib.contextmanager
def logged_runs() -> Iterator[list[dict[str, Any]]]:
    """The run log of the enclosed code: a list that, when the block ends, holds one dict per job that
    :func:`~pflnb.experiments.executors.execute` loaded, computed, failed or set aside in this process (``event``,
    ``kind``: tuning or verdict, ``method``, ``seed``, ``key``, ``profile``; ``seconds`` for a computed job).

    The block gets a run log of its own (``$PFLNB_RUN_LOG`` points to a temporary file), so no other process writing
    to a shared log mixes in; lines are appended afterwards to a run log that was set before (``pflnb reproduce``'s,
    which ``pflnb records export`` reads), which thus misses nothing. The driver alone writes the log, so this holds
    on every executor; a :class:`~pflnb.experiments.executors.Processes` pool kept from before the block is replaced
    (a pool is kept per environment)."""
    outer = os.environ.get(RUN_LOG_ENV)
    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pflnb-runs-") as folder:
        path = Path(folder) / "runs.jsonl"
        os.environ[RUN_LOG_ENV] = str(path)
        try:
            yield lines
        finally:
            if outer is None:
                os.environ.pop(RUN_LOG_ENV, None)
            else:
                os.environ[RUN_LOG_ENV] = outer
            text = path.read_text() if path.exists() else ""
            lines.extend(json.loads(line) for line in text.splitlines() if line.strip())
            if outer and text:
                with contextlib.suppress(OSError), open(outer, "a") as f:  # as log_event: a log line never costs a result
                    f.write(text)


def arm_summary(result: ExperimentResult, new: Sequence[str] = ()) -> pd.DataFrame:
    """One row per arm (per setting or grid point where the experiment has them): ``label``, ``method``, ``new``
    (whether the arm is one of ``new``), ``tuned`` (the arm's tuned choice, :meth:`ExperimentResult.tuned
    <pflnb.experiments.paper.ExperimentResult.tuned>`; 'as declared' where nothing is tuned at the profile),
    ``test_acc`` (mean ± sd over the verdict seeds in %, or 'diverged (k/n)'), ``test_acc_mean``, ``seeds`` and
    ``diverged`` (:func:`~pflnb.experiments.tables.mean_std`)."""
    table = result.table
    cells = [c for c in table.columns if c in _CELLS or c in result.experiment.grid]
    out = mean_std(table, by=[*cells, "label"], metrics=("test_acc",))
    out.insert(len(cells) + 1, "method", [result.experiment.arm(label).method for label in out["label"]])
    out.insert(len(cells) + 2, "new", out["label"].isin(list(new)))
    out.insert(len(cells) + 3, "tuned", [result.tuned(label) or "as declared" for label in out["label"]])
    return out


@dataclass
class NewArm:
    """What :func:`compare_new_arm` gives: the experiment's ``result`` (every arm, the new one included), the per-arm
    ``summary`` (:func:`arm_summary`), the ``runs`` of the call (its run log, one row per tuning or verdict job of the
    experiment: :func:`logged_runs`; a job computed inside another, e.g. the engine run inside FedPG's P-model job,
    logs no ``kind`` and is left out, as ``pflnb records export`` leaves it), the new arm's ``label`` and the call's
    wall time ``wall_s``."""

    result: ExperimentResult
    summary: pd.DataFrame
    runs: pd.DataFrame
    label: str
    wall_s: float

    @property
    def computed(self) -> int:
        """The number of jobs computed by the call (the others were loaded from the results cache)."""
        return self._count("computed")

    @property
    def loaded(self) -> int:
        """The number of jobs loaded from the results cache."""
        return self._count("loaded")

    @property
    def computed_s(self) -> float:
        """The jobs' own compute time, summed (seconds; the run log's ``seconds`` of each computed job)."""
        if self.runs.empty or "seconds" not in self.runs:
            return 0.0
        return float(self.runs.loc[self.runs.event == "computed", "seconds"].fillna(0.0).sum())

    @property
    def own_runs(self) -> int:
        """The new arm's runs: its tuning runs (every candidate on every tuning seed) and its verdict runs."""
        tuning = self.result.tuning
        tuned = 0 if tuning is None or tuning.empty else int((tuning["label"] == self.label).sum())
        return tuned + int((self.result.table["label"] == self.label).sum())

    def counts(self) -> pd.DataFrame:
        """Jobs per ``kind`` (tuning, verdict) and ``event`` (computed, loaded, ...)."""
        if self.runs.empty:
            return pd.DataFrame(columns=["kind", "event", "jobs"])
        return self.runs.groupby(["kind", "event"], sort=False).size().rename("jobs").reset_index()

    def _count(self, event: str) -> int:
        return 0 if self.runs.empty else int((self.runs.event == event).sum())


def compare_new_arm(
    paper: Paper,
    experiment: str,
    arm: Arm,
    profile: str,
    executor: Executor | None = None,
    *,
    keys: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    progress: bool = True,
    **options: Any,
) -> NewArm:
    """Run ``paper``'s experiment ``experiment`` at ``profile`` with ``arm`` added (:func:`with_arm`: tuned and seeded
    like the declared arms) on ``executor`` (default: the environment's), through
    :func:`~pflnb.experiments.paper.run_experiment` (``options``: its other arguments, e.g. ``device``, ``data_root``).
    Runs already in the results cache are loaded; with the baselines' records there (``pflnb records import``), only
    the new arm's tuning and verdict runs are computed. Warns when more jobs were computed than the new arm has runs:
    baseline records were missing from the cache, so they were computed too (and are cached now)."""
    extended = with_arm(paper, experiment, arm, keys)
    t0 = time.perf_counter()
    with logged_runs() as lines:
        result = run_experiment(extended, experiment, profile, executor=executor, progress=progress, **options)
    wall = time.perf_counter() - t0
    jobs = [line for line in lines if line.get("kind")]  # a job without a kind ran inside another (its engine run)
    columns = ["event", "kind", "method", "seed", "key", "profile", "seconds"]
    runs = pd.DataFrame(jobs, columns=[*columns, *sorted({k for line in jobs for k in line} - set(columns))])
    out = NewArm(result, arm_summary(result, [arm.label]), runs, arm.label, wall)
    if out.computed > out.own_runs:
        warnings.warn(
            f"{out.computed} jobs were computed, more than the {out.own_runs} runs of {arm.label!r}: records of the "
            f"other arms of {experiment!r} at {profile!r} were not in the results cache (import them first: "
            f"pflnb records import --profile {profile}); they are cached now",
            stacklevel=2,
        )
    return out
