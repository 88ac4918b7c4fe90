"""Jobs: every cached computation of the package, identified by a hash of what it computes and its inputs.

A :class:`Job` knows its identity (``key``, ``label``, ``profile``: together the cache file), how to compute its
record, and how to check a cached one. An engine run is a :class:`RunJob` (a config, and optionally an
:class:`EvalProtocol` that changes the evaluation data; the protocol is part of the key); a paper's side computation
(FedPG's P-model scores, a FedFac simulation) subclasses :class:`Job` next to the paper's code. Jobs are executed by
:func:`pflnb.experiments.executors.execute` on any executor (this process, local worker processes, Ray), which alone
reads and writes the cache (:mod:`pflnb.experiments.cache`).

:func:`reopen` turns a run's record (or config) back into its algorithm, data, context and final states for post-hoc
analysis.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_limits

import pflnb
from pflnb import kernels
from pflnb.algorithms import make_algorithm
from pflnb.data import FederatedDataset, build_federated
from pflnb.experiments.cache import read_json, read_torch, remove, results_root, write_json_atomic, write_torch_atomic
from pflnb.experiments.config import ExperimentConfig
from pflnb.fl.algorithm import Algorithm
from pflnb.fl.engine import Context, RunSettings, Simulation, drive, run_stacked, simulate, to_jsonable
from pflnb.fl.runner import local_plan_gap
from pflnb.models import build_model


@contextmanager
def thread_limits(threads: int) -> Iterator[None]:
    """Run the enclosed code with ``threads`` torch intra-op threads and at most ``threads`` BLAS/OpenMP threads
    (threadpoolctl); the previous counts are restored afterwards."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    previous = torch.get_num_threads()
    try:
        with threadpool_limits(limits=threads):
            torch.set_num_threads(threads)
            yield
    finally:
        torch.set_num_threads(previous)


def digest(*parts: Any) -> str:
    """16 hex digits of the SHA-256 of ``parts`` as canonical JSON (the key of a job built from other keys)."""
    return hashlib.sha256(json.dumps(to_jsonable(list(parts)), sort_keys=True).encode()).hexdigest()[:16]


class Job:
    """A cached computation. Subclasses set ``profile`` and ``threads`` and define :meth:`key`, :meth:`label`,
    :meth:`compute` and (for a check of cached files) :meth:`check`.

    The record lives at ``<root>/<profile>/<label>-<key>.<suffix>``; a suffix ending in ``pt`` stores it in torch's
    format (tensors), any other as strict JSON. Jobs must be picklable: the process and Ray executors send them to workers.
    """

    profile: str = "cpu"
    threads: int = 1
    suffix: str = "json"

    def key(self) -> str:
        """Hash of everything that changes the record."""
        raise NotImplementedError

    def label(self) -> str:
        """The file-name prefix (a method name, ``pm-fedpg``, ``fedfac-sim-true``, ...)."""
        raise NotImplementedError

    def compute(self, root: Path, progress: bool = False) -> dict[str, Any]:
        """Compute the record (``root``: the results folder, for files a computation keeps while it runs)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """A few fields naming the job in logs and failure reports: method, seed, key, profile."""
        return {"method": self.label(), "seed": getattr(self, "seed", None), "key": self.key(), "profile": self.profile}

    def details(self) -> dict[str, Any]:
        """Everything needed to recompute the job by hand (a failure report prints it)."""
        return self.describe()

    def validate(self) -> None:
        """Raise ValueError on bad inputs, before anything runs."""

    def stack_key(self) -> Any:
        """Jobs with one stack key (not None) may be computed together as one program (:func:`stack_groups`)."""
        return None

    @property
    def reads_cache(self) -> bool:
        """Whether a cached record may stand in for computing (False: compute, then store)."""
        return True

    @property
    def torch_format(self) -> bool:
        """Whether the record is stored in torch's format (a suffix ending in ``pt``) rather than as JSON."""
        return self.suffix.split(".")[-1] == "pt"

    def path(self, root: Path | str | None = None) -> Path:
        """The record's cache file (under the profile's folder for this process's CPU kernels,
        :func:`pflnb.kernels.cache_folder`)."""
        folder = kernels.cache_folder(self.profile, getattr(self, "seed", None))
        return Path(root or results_root()) / folder / f"{self.label()}-{self.key()}.{self.suffix}"

    def load(self, path: Path) -> dict[str, Any]:
        """The cached record, checked (:meth:`check`) and made under this process's kernel mode (else
        :class:`StaleRecord`)."""
        record = self.check(read_torch(path) if self.torch_format else read_json(path), path)
        about = record.get("kernels") if isinstance(record.get("kernels"), dict) else {}
        made = about.get("mode")
        expected = kernels.record_mode(getattr(self, "seed", None))
        if made != expected:
            raise StaleRecord(
                f"cached record {path} was made under CPU kernels {made or 'not recorded (before they were pinned)'}, "
                f"not {expected} ({kernels.ENV})"
            )
        # a mode whose settings changed since (the generic mode's MKL branch, 2026-11-28) made other bits: stale too
        changed = {v: about.get(v) for v, want in kernels.settings(expected).items() if about.get(v, want) != want}
        if changed:
            raise StaleRecord(
                f"cached record {path} was made under {expected} kernels with {changed}, which that mode no longer sets "
                f"({kernels.settings(expected)})"
            )
        return record

    def check(self, record: Any, path: Path) -> dict[str, Any]:
        """``record`` when it has the shape this job writes; else ValueError naming ``path`` and the fix."""
        if not isinstance(record, dict):
            raise ValueError(f"cached record {path} has the wrong shape (not a mapping); {FIX}")
        return record

    def store(self, path: Path, record: dict[str, Any]) -> None:
        """Write ``record`` (without the keys of :data:`TRANSIENT`) to ``path`` atomically."""
        kept = {k: v for k, v in record.items() if k not in TRANSIENT}
        (write_torch_atomic if self.torch_format else write_json_atomic)(path, kept)

    def discard_partial(self, root: Path | str | None) -> None:
        """Remove what an interrupted computation left to resume from (``force`` starts from scratch)."""


FIX = "delete it or re-run with --force (force=True)"


class StaleRecord(ValueError):
    """A cached record that is well formed but was computed under other CPU kernels than this process pins."""


TRANSIENT = ("final", "not_cached")  # in a returned record, never in the cache

# Jobs other than a plain engine run whose record its own fields describe (a config and the job's parameters, or a
# simulation's setting): each function takes a record and returns the job that computed it, or None when the record
# is not its kind (`pflnb verify` recomputes it).
REBUILDERS: list[Callable[[dict[str, Any]], Job | None]] = []


def rebuilds(fn: Callable[[dict[str, Any]], Job | None]) -> Callable[[dict[str, Any]], Job | None]:
    """Register ``fn`` in :data:`REBUILDERS` (a decorator, beside the job class it rebuilds)."""
    REBUILDERS.append(fn)
    return fn


# ---- engine runs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalProtocol:
    """A named change of a run's data before training (other test splits, say): ``transform(data, seed)``.

    The name is part of the run's key, so records under different protocols never mix. ``transform`` must be a
    module-level function (or a ``functools.partial`` of one) so that jobs can be sent to worker processes.
    """

    name: str
    transform: Callable[[FederatedDataset, int], FederatedDataset]

    def __call__(self, data: FederatedDataset, seed: int) -> FederatedDataset:
        return self.transform(data, seed)


class RunDivergedWarning(UserWarning):
    """A run stopped because a training loss or a model state became non-finite (recorded as diverged)."""


class RunDiverged(RuntimeError):
    """Raised when final states are requested from a run that diverged."""


def is_diverged(record: dict[str, Any]) -> bool:
    """Whether ``record`` is the record of a diverged run (no accuracy summary; see ``record["divergence"]``)."""
    return record.get("status") == "diverged"


def describe_divergence(record: dict[str, Any]) -> str:
    """One line: which run diverged, where (round, client) and in which quantity."""
    cfg, d = record.get("config", {}), record.get("divergence", {})
    where = "the server" if d.get("client") is None else f"client {d.get('client')}"
    return (
        f"{cfg.get('method')} (seed {cfg.get('seed')}, key {record.get('key')}) diverged at round {d.get('round')}, "
        f"{where}: {d.get('quantity')} = {d.get('value')}"
    )


def check_record(record: Any, path: Path, key: str | None = None) -> dict[str, Any]:
    """A run record read from ``path``, checked: the expected keys and (given ``key``) the job's key."""
    problem = None
    if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
        problem = "no 'config'"
    elif key is not None and record.get("key") != key:
        problem = f"key {record.get('key')!r} is not the config's {key!r}"
    elif record.get("status", "finished") == "diverged":
        if not isinstance(record.get("divergence"), dict):
            problem = "status 'diverged' without a 'divergence' entry"
    elif record.get("status", "finished") != "finished":
        problem = f"unknown status {record.get('status')!r}"
    elif not isinstance(record.get("summary"), dict) or "test_acc" not in record["summary"]:
        problem = "no 'summary' with 'test_acc'"
    elif not isinstance(record.get("evals"), list) or not isinstance(record.get("rounds"), list):
        problem = "no 'evals' or 'rounds' list"
    if problem:
        raise ValueError(f"cached record {path} has the wrong shape ({problem}); {FIX}")
    return record


def load_record(path: Path | str, key: str | None = None) -> dict[str, Any]:
    """A cached run record, checked for its shape and (given ``key``) its key (:func:`check_record`)."""
    return check_record(read_json(path), Path(path), key)


@dataclass(frozen=True)
class ConfigJob(Job):
    """A job computed from one experiment config ``cfg``: its profile (the cache folder), threads and seed are the
    config's; a bad config is refused before anything runs. Subclasses define :meth:`key`, :meth:`label` and
    :meth:`compute`."""

    cfg: ExperimentConfig

    @property
    def profile(self) -> str:  # type: ignore[override]
        return self.cfg.profile

    @property
    def threads(self) -> int:  # type: ignore[override]
        return self.cfg.threads

    @property
    def seed(self) -> int:
        return self.cfg.seed

    def details(self) -> dict[str, Any]:
        return {**self.describe(), "config": self.cfg.to_dict()}

    def validate(self) -> None:
        self.cfg.validate()


@dataclass(frozen=True)
class RunJob(ConfigJob):
    """One engine run of ``cfg``, with its data changed by ``protocol`` when one is given.

    ``checkpoint_every`` saves resumable state every k rounds beside the record (tagged with the key); any run that
    ends removes it. ``keep_final`` computes even when a record is cached and returns the final server and client
    states in ``record["final"]`` (never cached). The record holds the config, its key, per-round and
    per-evaluation metrics, internals, timings, the thread count and device it ran with, ``status`` ("finished"
    or "diverged": then a ``divergence`` entry and no summary) and the summary.
    """

    protocol: EvalProtocol | None = None
    checkpoint_every: int = 0
    keep_final: bool = False

    @property
    def reads_cache(self) -> bool:
        return not self.keep_final

    def key(self) -> str:
        return self.cfg.key() if self.protocol is None else digest(self.cfg.key(), {"protocol": self.protocol.name})

    def label(self) -> str:
        return self.cfg.method

    def describe(self) -> dict[str, Any]:
        about = {"method": self.cfg.method, "seed": self.cfg.seed, "key": self.key(), "profile": self.cfg.profile}
        return about if self.protocol is None else {**about, "protocol": self.protocol.name}

    def validate(self) -> None:
        self.cfg.validate()
        n = self.checkpoint_every
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"checkpoint_every must be an integer >= 0, got {n!r}")

    def check(self, record: Any, path: Path) -> dict[str, Any]:
        return check_record(record, path, self.key())

    def checkpoint(self, root: Path | str | None) -> Path:
        """The resumable state of an unfinished run (beside its record)."""
        return self.path(root).with_suffix(".ckpt")

    def discard_partial(self, root: Path | str | None) -> None:
        remove(self.checkpoint(root))

    def build(self) -> tuple[Algorithm, FederatedDataset, Callable[[], Any]]:
        """The run's algorithm, data (after the protocol) and model constructor."""
        cfg = self.cfg
        algorithm = make_algorithm(cfg.method, cfg.method_params)
        data = build_federated(cfg.data_spec(), seed=cfg.seed)
        if self.protocol is not None:
            data = self.protocol(data, cfg.seed)

        def model_fn():
            return build_model(cfg.model, data.input_shape, data.num_classes)

        return algorithm, data, model_fn

    def stack_key(self) -> tuple | None:
        """What the runs trained together by one stacked program share (None: this run is never stacked): the config
        but its seed, learning rate and float hyperparameters, the protocol and the checkpointing. A run stacks with
        ``runner="stacked"``, or ``"auto"`` on CUDA (:func:`stacks`)."""
        if self.keep_final or type(self).compute is not RunJob.compute or not stacks(self.cfg):
            return None  # final states are per run; a subclass computes something else
        if local_plan_gap(make_algorithm(self.cfg.method, self.cfg.method_params)) is not None:
            return None  # its local work runs sequentially: nothing to batch, better spread over workers
        shape = {k: v for k, v in self.cfg.to_dict().items() if k not in STACKED_FIELDS}
        # a float hyperparameter may differ too: where a training term holds it, it is a per-row value of the batched
        # step; where it shapes the plan, the runs train in separate groups of one call; the server's is per run
        shape["method_params"] = {k: v for k, v in self.cfg.method_params.items() if type(v) is not float}
        return (
            "run",
            json.dumps(shape, sort_keys=True),
            None if self.protocol is None else self.protocol.name,
            self.checkpoint_every,
        )

    def simulation(self, root: Path, progress: bool = False) -> tuple[Simulation, FederatedDataset, RunSettings]:
        """The run's round loop (:func:`~pflnb.fl.engine.simulate`, not started), its data and its settings."""
        cfg = self.cfg
        ckpt = self.checkpoint(root)
        algorithm, data, model_fn = self.build()
        settings = cfg.settings(progress, str(ckpt) if self.checkpoint_every else None, self.checkpoint_every)
        settings.checkpoint_tag = self.key()
        return simulate(algorithm, data, model_fn, settings), data, settings

    def compute(self, root: Path, progress: bool = False) -> dict[str, Any]:
        sim, data, settings = self.simulation(root, progress)
        with pflnb.determinism(self.cfg.deterministic):  # CUDA determinism controls (no effect on CPU results)
            record = drive(sim)
        return self.finish(record, data, settings, root)

    def finish(self, record: dict[str, Any], data: FederatedDataset, settings: RunSettings, root: Path) -> dict[str, Any]:
        """The engine's record completed as the cache keeps it (config, key, status, where it ran)."""
        cfg = self.cfg
        ckpt = self.checkpoint(root)
        record["threads"] = torch.get_num_threads()
        record["device"] = settings.device
        record["status"] = "diverged" if "divergence" in record else "finished"
        record["config"] = cfg.to_dict()
        record["key"] = self.key()
        if self.protocol is not None:
            record["protocol"] = self.protocol.name
        record["data_info"] = to_jsonable({k: v for k, v in data.info.items() if not hasattr(v, "shape")})
        final = record.pop("final", None)
        remove(ckpt)  # a run that ended (finished or diverged) leaves no checkpoint
        if self.keep_final and not is_diverged(record):
            record["final"] = final
        return record


def with_checkpoints(job: Job, every: int) -> Job:
    """``job`` saving resumable state every ``every`` rounds (0: never), for a job with a ``checkpoint_every`` field
    (an engine run: :class:`RunJob`, or a paper's job around one run) and each run of a :class:`StackedRuns`; another
    kind of job cannot resume, so asking it to checkpoint is a TypeError naming it (with ``every`` 0 it is returned as
    it is)."""
    if not isinstance(every, int) or isinstance(every, bool) or every < 0:
        raise ValueError(f"checkpoint_every must be an integer >= 0, got {every!r}")
    if isinstance(job, StackedRuns):
        return StackedRuns(tuple(with_checkpoints(j, every) for j in job.jobs))  # type: ignore[misc]
    if "checkpoint_every" in getattr(job, "__dataclass_fields__", {}):
        return dataclasses.replace(job, checkpoint_every=every)  # type: ignore[type-var]
    if every:
        raise TypeError(f"a {type(job).__name__} cannot save resumable state; run it with checkpoint_every=0")
    return job


STACKED_FIELDS = ("seed", "lr", "profile", "runner")  # fields in which runs trained together may differ (not the device)


def stacks(cfg: ExperimentConfig) -> bool:
    """Whether ``cfg``'s run trains stacked with the compatible runs of its sweep: ``runner="stacked"``, or ``"auto"``
    on CUDA (on a CPU the sequential runner is faster; ``benchmarks/roofline.py``)."""
    return cfg.runner == "stacked" or (cfg.runner == "auto" and pflnb.device(cfg.device).type == "cuda")


@dataclass(frozen=True)
class StackedRuns(Job):
    """Several :class:`RunJob` s of one :meth:`~RunJob.stack_key` computed as one program
    (:func:`~pflnb.fl.engine.run_stacked`): every round, the local work of all of them is one batched call. Its
    record is ``{"stack": [each run's record]}``, in the order of ``jobs``; :func:`~pflnb.experiments.executors.execute`
    caches each under its own key. A run that raises fails the whole stack (each of its runs reported failed; other
    units go on), as a run alone fails its own job."""

    jobs: tuple[RunJob, ...]

    def __post_init__(self) -> None:
        keys = {job.stack_key() for job in self.jobs}
        if not self.jobs or len(keys) != 1 or None in keys:
            raise ValueError(f"StackedRuns needs runs of one stack key; got {len(self.jobs)} run(s), {len(keys)} key(s)")

    @property
    def profile(self) -> str:  # type: ignore[override]
        return self.jobs[0].profile

    @property
    def cfg(self) -> ExperimentConfig:
        """The first run's config (what a Ray resource rule reads: the runs differ in seed and rate only)."""
        return self.jobs[0].cfg

    @property
    def threads(self) -> int:  # type: ignore[override]
        return self.jobs[0].threads

    def key(self) -> str:
        return digest([job.key() for job in self.jobs])

    def label(self) -> str:
        return f"stack-{self.jobs[0].label()}"

    def describe(self) -> dict[str, Any]:
        first = self.jobs[0].describe()
        return {**first, "seed": [job.cfg.seed for job in self.jobs], "key": self.key(), "runs": len(self.jobs)}

    def validate(self) -> None:
        for job in self.jobs:
            job.validate()

    def compute(self, root: Path, progress: bool = False) -> dict[str, Any]:
        parts = [job.simulation(root, False) for job in self.jobs]
        with pflnb.determinism(self.jobs[0].cfg.deterministic):
            records = run_stacked([sim for sim, _, _ in parts])
        return {"stack": [job.finish(r, d, s, root) for job, r, (_, d, s) in zip(self.jobs, records, parts)]}


def stack_groups(jobs: Sequence[Job], most: int | None = None) -> list[list[int]]:
    """The positions of ``jobs`` in units of computation: the jobs of one stack key (:meth:`Job.stack_key`) together,
    at most ``most`` a unit (default ``$PFLNB_STACK_MAX``, else 64), every other job alone; units in the order of
    their first job."""
    most = int(os.environ.get("PFLNB_STACK_MAX", "64")) if most is None else most
    if most < 1:
        raise ValueError(f"most (PFLNB_STACK_MAX) must be >= 1, got {most}")
    open_units: dict[Any, list[int]] = {}
    units: list[list[int]] = []
    for i, job in enumerate(jobs):
        key = job.stack_key()
        if key is None:
            units.append([i])
            continue
        if key not in open_units or len(open_units[key]) >= most:
            open_units[key] = []
            units.append(open_units[key])
        open_units[key].append(i)
    return units


def unit_job(jobs: Sequence[Job]) -> Job:
    """One job for a unit of :func:`stack_groups`: the job itself, or :class:`StackedRuns` of several."""
    return jobs[0] if len(jobs) == 1 else StackedRuns(tuple(jobs))  # type: ignore[arg-type]


# ---- post-hoc analysis of a run ---------------------------------------------------------------------------------


@dataclass
class Reopened:
    """A finished run, reopened: its algorithm, data (on the run's device), model constructor, final server and
    client states and record. :meth:`context` gives a :class:`~pflnb.fl.engine.Context` as after the last round."""

    cfg: ExperimentConfig
    algorithm: Algorithm
    data: FederatedDataset
    model_fn: Callable[[], Any]
    device: torch.device
    server: dict[str, Any]
    clients: list[dict[str, Any]]
    record: dict[str, Any]

    def context(self, optim_round: int | None = None) -> Context:
        """The run's context after training (``round`` = rounds + 1), with the local optimizer's schedule at
        ``optim_round`` (default: the last round)."""
        cfg = self.cfg
        optim = cfg.optim().at_round(cfg.rounds if optim_round is None else optim_round)
        ctx = Context(self.data, self.model_fn, optim, cfg.seed, self.device, cfg.finetune_epochs)
        ctx.round = cfg.rounds + 1
        return ctx

    def model(self, state: dict[str, Any] | None = None) -> torch.nn.Module:
        """A fresh model on the run's device, loaded with ``state`` (default: the final server model)."""
        module = self.model_fn().to(self.device)
        module.load_state_dict(self.server["model"] if state is None else state)
        return module


def rebuilds_runs_under(protocol: EvalProtocol) -> EvalProtocol:
    """Register the engine runs under ``protocol`` in :data:`REBUILDERS` (their records name it) and return it."""

    def run_under(record: dict[str, Any]) -> RunJob | None:
        if record.get("protocol") != protocol.name:
            return None
        return RunJob(ExperimentConfig.from_dict(record["config"]), protocol=protocol)

    rebuilds(run_under)
    return protocol
