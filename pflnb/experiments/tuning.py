"""Running and tuning a declared experiment: :func:`run_experiment` tunes each arm (:func:`_tune`: the mean best
validation over the tuning seeds, a diverged or collapsed candidate excluded, the grid-edge rule) and runs its verdict
seeds, returning an :class:`ExperimentResult`; the tables of what tuning chose and where it stopped at an edge
(:func:`tuning_summary`, :func:`tuning_edges`, :func:`edge_report`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.data.spec import NUM_CLASSES
from pflnb.experiments import claims as R
from pflnb.experiments.claimspec import Paper
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.declarations import (
    EDGE_STEPS,
    Choice,
    Chooser,
    Experiment,
    best_on_validation,
    excluded,
    experiment_chance,
    tuning_score,
)
from pflnb.experiments.executors import Executor, execute
from pflnb.experiments.jobs import RunJob, with_checkpoints
from pflnb.experiments.result import ExperimentResult
from pflnb.experiments.run import warn_diverged
from pflnb.experiments.tables import summary_table


def run_experiment(
    paper: Paper,
    name: str,
    profile: str,
    *,
    seeds: Sequence[int] | None = None,
    dataset: str | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    arms: Sequence[str] | None = None,
    settings: Sequence[str] | None = None,
    checkpoint_every: int = 0,
    **overrides: Any,
) -> ExperimentResult:
    """Run (or load from the cache) every run of ``paper``'s experiment ``name`` at ``profile`` on ``executor``
    (default: the environment's): the declared seeds unless ``seeds`` are given, the declared dataset unless
    ``dataset`` is, every arm unless ``arms`` (labels) names some, every setting unless ``settings`` (names) names some
    (each arm tuned and seeded as in the whole experiment: the same runs, the same cache keys); ``overrides`` are config
    fields for every run (``device``, ``data_root``, ...). Each record gets its arm's ``label``. With
    ``checkpoint_every`` k, every run saves resumable state every k rounds and resumes from it when run again (an
    interrupted sweep loses at most k rounds of each run in flight; the records are the uninterrupted ones)."""
    experiment = paper.experiment(name)
    for what, value in (("arms", arms), ("settings", settings)):
        if isinstance(value, str):
            raise TypeError(f"{what} must be a sequence of names, not the string {value!r}")
    if settings is not None:
        experiment = _with_settings(experiment, profile, settings)
    if arms is not None:
        unknown = sorted(set(arms) - {a.label for a in experiment.arms})
        if unknown:
            raise ValueError(f"experiment {name!r} has no arm(s) {unknown}; it has {[a.label for a in experiment.arms]}")
        sources = {experiment.tune.shared.get(a) for a in arms} - {None} if experiment.tune is not None else set()
        missing = sorted(sources - set(arms))
        if missing:
            raise ValueError(f"arms {sorted(arms)} take the tuned choice of {missing}; name those too")
        experiment = _with_arms(experiment, arms)
    if settings is not None and not experiment.runs(profile, seeds, dataset, **overrides):
        raise ValueError(f"experiment {name!r} has no runs of arms {arms} in settings {list(settings)} at {profile!r}")
    tuning, choice = _tune(
        experiment, profile, seeds, dataset, executor, progress, checkpoint_every=checkpoint_every, **overrides
    )
    runs = experiment.runs(profile, seeds, dataset, choice=choice, **overrides)
    records = _execute(experiment, runs, executor, progress, checkpoint_every=checkpoint_every)
    labels = pd.DataFrame([lab for lab, _ in runs])
    metrics = summary_table(records).drop(columns=["method", "dataset", "seed"])
    result = ExperimentResult(experiment, profile, pd.concat([labels, metrics], axis=1), records, tuning)
    untuned = [result.untuned(lab["label"], **{k: v for k, v in lab.items() if k not in ("label", "seed")}) for lab, _ in runs]
    if any(untuned):  # each run of an arm whose tuning found no value that trained, marked (R.marked reads it)
        result.table["untuned"] = untuned
        for record, why in zip(records, untuned):
            if why:
                record["untuned"] = why
    return result


def _with_settings(experiment: Experiment, profile: str, names: Sequence[str]) -> Experiment:
    """``experiment`` with the settings ``names`` only at ``profile`` (each kept setting's runs unchanged)."""
    declared = [s.name for s in experiment.settings.get(profile, ())]
    unknown = sorted(set(names) - set(declared))
    if unknown or not names:
        raise ValueError(f"experiment {experiment.name!r} has no setting(s) {unknown or '[]'} at {profile!r}; it has {declared}")
    kept = tuple(s for s in experiment.settings.get(profile, ()) if s.name in set(names))
    return dataclasses.replace(experiment, settings={**experiment.settings, profile: kept})


def _with_arms(experiment: Experiment, arms: Sequence[str]) -> Experiment:
    """``experiment`` with the arms ``arms`` only; its tuning keys and shared choices and its settings' arm lists
    narrowed to them (each kept arm's runs unchanged)."""
    keep = set(arms)
    tune = experiment.tune
    if tune is not None:
        tune = dataclasses.replace(
            tune,
            keys={k: v for k, v in tune.keys.items() if k in keep},
            shared={k: v for k, v in tune.shared.items() if k in keep},
        )
    settings = {
        profile: tuple(s if s.arms is None else dataclasses.replace(s, arms=tuple(a for a in s.arms if a in keep)) for s in ss)
        for profile, ss in experiment.settings.items()
    }
    kept = tuple(a for a in experiment.arms if a.label in keep)
    return dataclasses.replace(experiment, arms=kept, tune=tune, settings=settings)


def _execute(
    experiment: Experiment,
    runs: list[tuple[dict[str, Any], ExperimentConfig]],
    executor: Executor | None,
    progress: bool,
    tuning: bool = False,
    checkpoint_every: int = 0,
) -> list[dict[str, Any]]:
    make = (lambda cfg, arm: RunJob(cfg, experiment.protocol)) if tuning else experiment.make_job
    jobs = [with_checkpoints(make(cfg, experiment.arm(lab["label"])), checkpoint_every) for lab, cfg in runs]
    kind = "tuning" if tuning else "verdict"
    records = execute(jobs, executor, progress=progress, kind=kind, experiment=experiment.name)
    for (lab, _), record in zip(runs, records):
        record["label"] = lab["label"]
    warn_diverged(records)
    return records


def beyond_edge(tried: Sequence[Any], chosen: Any) -> Any | None:
    """The grid-edge rule's next value: when ``chosen`` is the smallest (largest) of the numeric, positive values
    ``tried`` of one tuned field, one geometric step beyond that edge (the ratio of the edge to its neighbour, e.g.
    3e-4 → 9e-5 below {3e-4, 1e-3, 3e-3}, 0.1 → 0.2 above {0.01, 0.05, 0.1}); None when it is interior or the
    values are not positive numbers."""
    values = sorted({v for v in tried if isinstance(v, int | float) and not isinstance(v, bool)})
    if len(values) < 2 or len(values) != len(set(tried)) or values[0] <= 0 or chosen not in values:
        return None
    if chosen == values[0]:
        nxt = values[0] * values[0] / values[1]
    elif chosen == values[-1]:
        nxt = values[-1] * values[-1] / values[-2]
    else:
        return None
    return float(f"{nxt:.3g}")  # 1e-4, not 9.99e-05: the value as one would write it


def _tune(
    experiment: Experiment,
    profile: str,
    seeds: Sequence[int] | None,
    dataset: str | None,
    executor: Executor | None,
    progress: bool,
    chooser: Chooser | None = None,
    checkpoint_every: int = 0,
    **overrides: Any,
) -> tuple[pd.DataFrame | None, Choice | None]:
    """The tuning runs of ``experiment`` (jobs like any other: cached, on the executor), one row each (labels, the
    candidate's values as ``tuned:<name>``, ``best_val_acc``, ``chosen``, ``step``), and the choice per cell.

    Every cell (setting or grid point, arm) is tuned alike: first on the declared grid (``step`` 0); then, by the
    standard grid-edge rule, while its choice sits at an edge of a tuned numeric value, one more candidate one step
    beyond that edge (:func:`beyond_edge`, the other values held at their choice), until the choice is interior or
    :data:`EDGE_STEPS` steps beyond an edge were taken (``step`` counts them).

    The choice is the candidate of the best mean :func:`tuning_score` over the tuning seeds (the first on ties; a
    candidate at which a seed diverged or collapsed below the experiment's floor scores −∞, and a cell none of whose
    candidates trained on every seed is not extended: its choice is its first candidate, and ``excluded`` in its rows
    says why); a ``chooser`` replaces that
    rule (it gets the cell and each candidate's records, in the order tried, and returns the index chosen), e.g.
    :class:`~pflnb.experiments.halving.Halving` to measure successive halving on the same runs."""
    runs = experiment.tuning_runs(profile, dataset, **overrides)
    if not runs:
        return None, None
    tune = experiment.tune
    if seeds is not None and set(seeds) & set(tune.seeds[profile]):
        raise ValueError(f"seeds {sorted(seeds)} include the tuning seeds {list(tune.seeds[profile])}; choose others")
    cells = [c for c in runs[0][0] if c not in ("seed", "candidate")]  # a run's labels but its seed
    key = lambda lab: tuple(lab[c] for c in cells)  # noqa: E731
    tried: dict[tuple[Any, ...], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    steps: dict[tuple[Any, ...], list[int]] = {}
    for lab, _ in runs:
        if lab["candidate"] == len(tried.setdefault(key(lab), [])):
            arm = experiment.arm(lab["label"])
            options = tune.candidates(arm.label, profile, arm.method, experiment.arm_optimizer(arm.label, profile))
            tried[key(lab)].append(options[lab["candidate"]])
            steps.setdefault(key(lab), []).append(0)
    rows: list[dict[str, Any]] = []
    records: dict[tuple[Any, ...], dict[int, list[dict[str, Any]]]] = {}  # cell → candidate → its records (chooser)

    chance = 1.0 / NUM_CLASSES.get(dataset, 10) if dataset else experiment_chance(experiment, profile)
    floor = R.Floor(chance).points / 100  # a collapsed tuning run rules out its candidate

    def score(batch: list[tuple[dict[str, Any], ExperimentConfig]]) -> None:
        for (lab, _), record in zip(
            batch, _execute(experiment, batch, executor, progress, tuning=True, checkpoint_every=checkpoint_every)
        ):
            fields, params = tried[key(lab)][lab["candidate"]]
            values = {f"tuned:{n}": v for n, v in {**fields, **params}.items()}
            rows.append(
                {
                    **lab,
                    **values,
                    "best_val_acc": tuning_score(record, floor),
                    "excluded": excluded(record, floor),
                    "step": steps[key(lab)][lab["candidate"]],
                }
            )
            if chooser is not None:  # only a chooser reads the records; the grid's rule reads the table
                records.setdefault(key(lab), {}).setdefault(lab["candidate"], []).append(record)

    def means(cell: tuple[Any, ...]) -> list[float]:
        table = pd.DataFrame(rows)
        mean = table.groupby([*cells, "candidate"], sort=False)["best_val_acc"].mean()
        return [float(mean.loc[(*cell, k)]) for k in range(len(tried[cell]))]

    def choose() -> dict[tuple[Any, ...], int]:
        if chooser is not None:
            return {cell: chooser(cell, [records[cell][k] for k in range(len(options))]) for cell, options in tried.items()}
        return {cell: best_on_validation(means(cell)) for cell in tried}

    score(runs)
    taken: dict[tuple[Any, ...], int] = {}  # (cell, name, side) → steps beyond that edge
    while True:
        chosen, new = choose(), {}
        for cell, options in tried.items():
            if means(cell)[chosen[cell]] == -math.inf:  # no candidate trained on every seed: no edge to follow
                continue
            fields, params = options[chosen[cell]]
            for name, value in {**fields, **params}.items():
                values = [{**f, **p}[name] for f, p in options]
                nxt = beyond_edge(values, value)
                side = (cell, name, nxt is not None and nxt > value)
                if nxt is None or taken.get(side, 0) >= EDGE_STEPS or nxt in values:
                    continue
                taken[side] = taken.get(side, 0) + 1
                where = fields if name in fields else params
                candidate = ({**fields, name: nxt}, dict(params)) if where is fields else (dict(fields), {**params, name: nxt})
                new[cell] = candidate
                break  # one new candidate per cell and pass: the next pass re-chooses with it
        if not new:
            break
        for cell, candidate in new.items():
            tried[cell].append(candidate)
            steps[cell].append(max(steps[cell]) + 1)

        def extension(cell: Mapping[str, Any], new: dict = new) -> tuple[dict[str, Any], dict[str, Any]] | None:
            return new.get(key(cell))

        batch = experiment.runs(profile, tune.seeds[profile], dataset, choice=extension, **overrides)
        score([({**lab, "candidate": len(tried[key(lab)]) - 1}, cfg) for lab, cfg in batch])
    table = pd.DataFrame(rows)
    table["chosen"] = [chosen[key(row)] == row["candidate"] for _, row in table.iterrows()]

    def choice(cell: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        source = tune.shared.get(cell.get("label"))  # an arm that takes another arm's choice
        at = key({**cell, "label": source} if source else cell)
        return tried[at][chosen[at]]

    return table, choice


def tune_experiment(
    experiment: Experiment,
    profile: str,
    executor: Executor | None = None,
    progress: bool = True,
    chooser: Chooser | None = None,
) -> tuple[pd.DataFrame | None, Choice | None]:
    """``experiment``'s tuning at ``profile`` on its declared seeds and data, as :func:`run_experiment` does it (the
    runs loaded from the cache where they are): its table and choice (:func:`_tune`), under ``chooser`` if given."""
    return _tune(experiment, profile, None, None, executor, progress, chooser=chooser)


def tuning_columns(tuning: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(cells, values) of a tuning table (:func:`_tune`): the columns naming a cell (setting or grid point, arm) and
    the tuned values (``tuned:<name>``)."""
    values = [c for c in tuning.columns if c.startswith("tuned:")]
    cells = [c for c in tuning.columns if c not in ("seed", "candidate", "best_val_acc", "excluded", "chosen", "step", *values)]
    return cells, values


def tuned_experiments(
    papers: Sequence[Paper], profile: str, executor: Executor | None = None, progress: bool = True
) -> Iterator[tuple[Paper, Experiment, pd.DataFrame]]:
    """(paper, experiment, tuning table) of every experiment of ``papers`` tuned at ``profile`` (:func:`tune_experiment`:
    the tuning runs loaded from the cache where they are)."""
    for paper in papers:
        for experiment in paper.experiments:
            if experiment.tune is None or profile not in experiment.tune.seeds:
                continue
            tuning, _ = tune_experiment(experiment, profile, executor, progress)
            if tuning is not None and not tuning.empty:
                yield paper, experiment, tuning


EDGE_COLUMNS = ["experiment", "cell", "chosen", "at edge on the grid", "at edge after the rule", "no value trained"]


def edge_cells(tuning: pd.DataFrame) -> pd.DataFrame:
    """One row per tuned cell (setting or grid point, arm) of one experiment's tuning table: the cell, its final
    choice, whether its choice on the declared grid sat at an edge of a tuned numeric value (``at edge on the grid``),
    and whether its final choice still sits at one after the grid-edge rule (``at edge after the rule``: the cap was
    reached, so the arm was not tuned to an interior value); ``no value trained``: every value diverged or collapsed on
    a tuning seed, so the cell was never extended and its choice (the first value) is no choice (neither edge flag)."""
    cells, values = tuning_columns(tuning)
    mean = tuning.groupby([*cells, "candidate"], sort=False).agg(
        **{v: (v, "first") for v in values}, val=("best_val_acc", "mean"), step=("step", "first"), chosen=("chosen", "first")
    )
    rows = []
    for cell, group in mean.reset_index().groupby(cells, sort=False):
        cell = cell if isinstance(cell, tuple) else (cell,)
        flags = []
        for rows_, is_final in ((group[group.step == 0], False), (group, True)):
            pick = group[group.chosen].iloc[0] if is_final else rows_.iloc[best_on_validation(list(rows_.val))]
            flags.append(
                any(
                    beyond_edge([r[v] for _, r in rows_.iterrows()], pick[v]) is not None
                    for v in values
                    if pd.notna(pick[v]) and rows_[v].nunique() > 1
                )
            )
        final = group[group.chosen].iloc[0]
        chosen = ", ".join(f"{v[6:]}={final[v]}" for v in values if pd.notna(final[v]))
        untrained = bool((group.val == -math.inf).all())  # every value diverged or collapsed: never extended
        edges = {"at edge on the grid": flags[0] and not untrained, "at edge after the rule": flags[1] and not untrained}
        rows.append({**dict(zip(cells, cell)), "chosen": chosen, **edges, "no value trained": untrained})
    return pd.DataFrame(rows, columns=[*cells, *EDGE_COLUMNS[2:]])


def edge_counts(tuning: pd.DataFrame) -> tuple[int, int, int]:
    """(tuned cells, cells whose choice on the declared grid sat at an edge, cells whose final choice still sits at an
    edge after the grid-edge rule: its cap reached) of one experiment's tuning table (:func:`edge_cells`)."""
    t = edge_cells(tuning)
    return len(t), int(t["at edge on the grid"].sum()), int(t["at edge after the rule"].sum())


def tuning_edges(results: Mapping[str, Any]) -> pd.DataFrame:
    """Every tuned cell of the experiments among ``results`` (what a notebook decides its claims on), one row each:
    the experiment, the cell in words ('Dir(0.1) FedAvg'), its choice and whether it sits at an edge of its grid
    before and after the grid-edge rule (:func:`edge_cells`). An arm still at an edge after the rule was not tuned
    to an interior value; the paper's page counts them (``pflnb tuning`` gives the same account from the cache)."""
    frames = []
    for name, res in results.items():
        if not isinstance(res, ExperimentResult) or res.tuning is None or res.tuning.empty:
            continue
        t = edge_cells(res.tuning)
        cells = [c for c in t.columns if c not in EDGE_COLUMNS]
        t.insert(0, "cell", [" ".join(str(r[c]) for c in cells) for _, r in t.iterrows()])
        frames.append(t.drop(columns=cells).assign(experiment=name)[EDGE_COLUMNS])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EDGE_COLUMNS)


def write_tuning_edges(results: Mapping[str, Any], path: str | Path) -> pd.DataFrame:
    """Write :func:`tuning_edges` of ``results`` to ``path`` (CSV) and return it."""
    table = tuning_edges(results)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return table


def edge_report(papers: Sequence[Paper], profile: str, executor: Executor | None = None, progress: bool = True) -> pd.DataFrame:
    """The grid-edge rule's account, one row per tuned experiment of ``papers`` at ``profile``: its tuned cells
    (setting, arm), how many chose a value at an edge of the declared grid, and how many still sit at an edge after
    the rule (its cap reached). The tuning runs are jobs like any other: loaded from the cache where they are."""
    rows = []
    for paper, experiment, tuning in tuned_experiments(papers, profile, executor, progress):
        cells, before, after = edge_counts(tuning)
        rows.append(
            {
                "paper": paper.name,
                "experiment": experiment.name,
                "cells": cells,
                "at edge on the grid": before,
                "at edge after the rule": after,
            }
        )
    return pd.DataFrame(rows, columns=["paper", "experiment", "cells", "at edge on the grid", "at edge after the rule"])


def tuning_summary(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per tuned (experiment, cell, arm) among ``results`` (what :func:`decide` reads): each candidate's mean
    best validation accuracy (%) over the tuning seeds, and the choice."""
    rows = []
    for name, res in results.items():
        if not isinstance(res, ExperimentResult) or res.tuning is None or res.tuning.empty:
            continue
        t = res.tuning
        cells, values = tuning_columns(t)
        mean = t.groupby([*cells, "candidate"], sort=False).agg(
            **{v: (v, "first") for v in values}, val=("best_val_acc", "mean"), chosen=("chosen", "first")
        )
        for cell, group in mean.reset_index().groupby(cells, sort=False):
            cell = cell if isinstance(cell, tuple) else (cell,)
            shown = [", ".join(f"{v[6:]}={row[v]}" for v in values if pd.notna(row[v])) for _, row in group.iterrows()]
            tried = " · ".join(f"{s}: {100 * row.val:.1f}" for s, (_, row) in zip(shown, group.iterrows()))
            chosen = next(s for s, (_, row) in zip(shown, group.iterrows()) if row.chosen)
            rows.append({"experiment": name, **dict(zip(cells, cell)), "validation accuracy (%)": tried, "chosen": chosen})
    return pd.DataFrame(rows)
