"""Engine runs on the job layer: :func:`run` (one config), :func:`run_many` (a sweep), :func:`sweep` (a grid) and
:func:`reopen` (a finished run's states for post-hoc analysis).

Each config becomes a :class:`~pflnb.experiments.jobs.RunJob` (with an optional evaluation protocol) executed by
:func:`~pflnb.experiments.executors.execute`, the one place that reads and writes the results cache, on any
executor (``executor=``; default from ``$PFLNB_BACKEND`` / ``$PFLNB_WORKERS``).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pflnb
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.executors import Executor, JobsFailed, Serial, execute
from pflnb.experiments.jobs import (
    EvalProtocol,
    Reopened,
    RunDiverged,
    RunDivergedWarning,
    RunJob,
    describe_divergence,
    is_diverged,
)


def cache_path(cfg: ExperimentConfig, root: Path | str | None = None, protocol: EvalProtocol | None = None) -> Path:
    """Where the record of ``cfg`` (under ``protocol``) is cached."""
    return RunJob(cfg, protocol).path(root)


def warn_diverged(records: Iterable[dict[str, Any] | None], stacklevel: int = 3) -> None:
    """A RunDivergedWarning for every diverged record."""
    for record in records:
        if record is not None and is_diverged(record):
            warnings.warn(describe_divergence(record), RunDivergedWarning, stacklevel=stacklevel)


def run(
    cfg: ExperimentConfig,
    *,
    protocol: EvalProtocol | None = None,
    cache: bool = True,
    force: bool = False,
    progress: bool = True,
    checkpoint_every: int = 0,
    keep_final: bool = False,
    root: Path | str | None = None,
    warn: bool = True,
) -> dict[str, Any]:
    """Run one experiment in this process, or return its cached record (see :class:`~pflnb.experiments.jobs.RunJob`).

    Validates the config before touching data; the run executes with ``cfg.threads`` torch and BLAS threads.
    ``keep_final`` also returns the final server and client states in ``record["final"]`` (never cached; a
    diverged run raises RunDiverged). ``checkpoint_every`` saves resumable state; ``force`` ignores both the cached
    record and any checkpoint. A diverged run is recorded (and cached) with status "diverged" and a RunDivergedWarning
    (``warn``). An exception in the run is raised as it is; a record that cannot be written after training comes back
    with ``not_cached`` set (RecordNotCachedWarning).
    """
    job = RunJob(cfg, protocol, checkpoint_every, keep_final)
    try:
        (record,) = execute([job], Serial(), cache=cache, force=force, root=root, progress=progress)
    except JobsFailed as err:
        if err.__cause__ is not None:
            raise err.__cause__ from None
        raise
    if is_diverged(record):
        if warn:
            where = f"cached in {job.path(root)}" if cache and not record.get("not_cached") else "not cached"
            warnings.warn(f"{describe_divergence(record)}; {where}", RunDivergedWarning, stacklevel=2)
        if keep_final:
            raise RunDiverged(f"{describe_divergence(record)}; it has no final states")
    return record


def run_many(
    configs: Iterable[ExperimentConfig],
    *,
    executor: Executor | None = None,
    protocol: EvalProtocol | None = None,
    progress: bool = True,
    cache: bool = True,
    force: bool = False,
    root: Path | str | None = None,
    checkpoint_every: int = 0,
    warn: bool = True,
) -> list[dict[str, Any]]:
    """Run several configs (cached ones are loaded) with one progress bar; records come back in input order.

    ``executor``: :class:`~pflnb.experiments.executors.Serial`, ``Processes(workers)`` or ``Ray(...)`` (default:
    ``$PFLNB_BACKEND``/``$PFLNB_WORKERS``). Every run is seeded from its own config and executes with its config's
    ``threads`` wherever it runs, so the records equal a serial run's. A run that fails does not stop the others:
    every finished run is cached, and :class:`~pflnb.experiments.executors.JobsFailed` lists the failures at the
    end. Diverged runs come back as their records (``status`` "diverged") with a RunDivergedWarning each (``warn``).
    """
    jobs = [RunJob(cfg, protocol, checkpoint_every) for cfg in configs]
    records = execute(jobs, executor, cache=cache, force=force, root=root, progress=progress)
    if warn:
        warn_diverged(records)
    return records


def reopen(
    record_or_cfg: dict[str, Any] | ExperimentConfig,
    protocol: EvalProtocol | None = None,
    progress: bool = False,
    cache: bool = True,
    checkpoint_every: int = 0,
    root: Path | str | None = None,
) -> Reopened:
    """A run's algorithm, data, model constructor and final states, for post-hoc analysis (see
    :class:`~pflnb.experiments.jobs.Reopened`): the run is computed again in this process (final states are never
    cached; the run is seeded, so they are the states its record describes) and its record refreshed in the cache
    (``cache``; under ``root``). ``checkpoint_every`` k saves resumable state every k rounds, and a run computed again
    resumes from it (its final states are the uninterrupted run's)."""
    cfg = ExperimentConfig.from_dict(record_or_cfg["config"]) if isinstance(record_or_cfg, dict) else record_or_cfg
    job = RunJob(cfg, protocol, keep_final=True)
    record = run(
        cfg, protocol=protocol, keep_final=True, progress=progress, cache=cache, checkpoint_every=checkpoint_every, root=root
    )
    final = record.pop("final")
    algorithm, data, model_fn = job.build()
    device = pflnb.device(cfg.device)
    return Reopened(cfg, algorithm, data.to(device), model_fn, device, final["server"], final["clients"], record)


def sweep(
    base: ExperimentConfig,
    methods: Iterable[str] | None = None,
    seeds: Iterable[int] = (0,),
    grid: dict[str, list[Any]] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run ``base`` for every method × seed × grid combination (a grid maps a field to its values); a repeated
    method, seed or grid value is an error (it would count one run twice)."""
    methods = list(methods) if methods is not None else [base.method]
    seeds = list(seeds)
    for name, values in (("methods", methods), ("seeds", seeds), *((f"grid[{k!r}]", list(v)) for k, v in (grid or {}).items())):
        repeated = sorted({repr(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"{name} has repeated values {', '.join(repeated)}; each would run (and count) twice")
    grid = grid or {}
    names = list(grid)
    configs = []
    for method in methods:
        for values in itertools.product(*(grid[n] for n in names)):
            for seed in seeds:
                configs.append(base.replace(method=method, seed=seed, **dict(zip(names, values))))
    return run_many(configs, **kwargs)
