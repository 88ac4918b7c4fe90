"""Executors and :func:`execute`: the one place that runs jobs, reads and writes the cache, and reports failures.

:func:`execute` takes a list of :class:`~pflnb.experiments.jobs.Job` and an executor:

- :class:`Serial`: in this process, one after the other;
- :class:`Processes`: in ``workers`` spawned processes on this machine (one torch/BLAS thread each unless the job
  asks for more; they exit when this process dies);
- :class:`Ray`: as Ray tasks on a cluster (or a local instance), each with its own resources; see
  :mod:`pflnb.experiments.ray_backend` for the connection and the environment variables.

Whatever the executor, :func:`execute` decides which jobs are cached (and loads them), checks before the first job
starts that every record can be written, writes each computed record as soon as it arrives (the driver alone writes
the cache), returns records in input order, and on failures keeps every finished record and raises one
:class:`JobsFailed` listing each failed job with its details and traceback. :func:`default_executor` reads
``$PFLNB_BACKEND`` (``local`` or ``ray``) and ``$PFLNB_WORKERS``.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_limits

import pflnb
from pflnb import kernels
from pflnb import progress as bars
from pflnb.experiments import gpu_share, ray_backend
from pflnb.experiments.cache import (
    RecordNotCachedWarning,
    SetAside,
    check_results_root,
    log_event,
    move_aside,
    not_cached_reason,
    report_not_cached,
    report_set_aside,
    results_root,
)
from pflnb.experiments.jobs import Job, StackedRuns, stack_groups, thread_limits, unit_job
from pflnb.progress import tqdm

Outcome = dict[str, Any]  # {"ok": True, "record": ...} or {"ok": False, "error": traceback text[, "exception": ...]}


def compute(job: Job, root: Path, progress: bool = False) -> Outcome:
    """Compute one job with its thread count; the record, or the traceback of what it raised; ``seconds``: the job's
    wall time where it ran (the run log's cost of a computed job)."""
    t0 = time.perf_counter()
    try:
        with thread_limits(job.threads):
            record = job.compute(root, progress)
        record["kernels"] = kernels.describe()  # where it ran: the CPU, torch's kernels in use, the pinned settings
        return {"ok": True, "record": record, "seconds": time.perf_counter() - t0}
    except Exception as err:
        return {"ok": False, "error": traceback.format_exc(), "exception": err, "seconds": time.perf_counter() - t0}


Rounds = Callable[[str], None]  # shows the runs in flight (``fedprox 312/2000, ...``): the sweep bar's postfix


class Executor:
    """Where jobs run. :meth:`outcomes` yields ``(index, outcome)`` for every job as it finishes; an executor whose
    jobs run where no bar can draw may call ``rounds`` with the runs in flight (:class:`Processes`)."""

    desc = "jobs"

    def prepare(self, jobs: Sequence[Job]) -> None:
        """Check, before anything runs, that the jobs can run here (picklable, resources that exist, ...)."""

    def outcomes(
        self, jobs: Sequence[Job], root: Path, progress: bool, rounds: Rounds | None = None
    ) -> Iterator[tuple[int, Outcome]]:
        raise NotImplementedError


class Serial(Executor):
    """Jobs in this process, one after the other (``progress``: each job's own bar, e.g. an engine run's rounds)."""

    desc = "runs"

    def outcomes(
        self, jobs: Sequence[Job], root: Path, progress: bool, rounds: Rounds | None = None
    ) -> Iterator[tuple[int, Outcome]]:
        for i, job in enumerate(jobs):
            yield i, compute(job, root, progress)


PARENT_DIED_EXIT = 75  # exit status of a worker whose parent process died


def _exit_when_parent_dies() -> None:
    """Start a daemon thread that ends this (spawned) process as soon as its parent process is gone: it waits on
    multiprocessing's parent sentinel (a pipe on POSIX, a process handle on Windows), so it needs no polling."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(PARENT_DIED_EXIT)  # no cleanup: the parent that would collect the result is gone

    threading.Thread(target=watch, name="pflnb-parent-watchdog", daemon=True).start()


_BUSY = threading.Event()  # set in a worker while it computes a job


def _on_interrupt(signum: int, frame: Any) -> None:
    """SIGINT in a worker: a running job is interrupted (KeyboardInterrupt, as without the handler); an idle worker,
    waiting for its next job, exits at once with status 0. Jupyter sends SIGINT to the kernel's whole process group,
    workers included, on an interrupt and when it shuts a kernel down; idle workers used to print a KeyboardInterrupt
    traceback into every executed notebook's log. ``os._exit``, not ``SystemExit``: an exception raised between two
    jobs could travel back to the parent as a job's result. The parent sees a pool with a missing worker and spawns a
    new one at its next call (:func:`worker_pool`)."""
    if _BUSY.is_set():
        raise KeyboardInterrupt
    os._exit(0)


def init_worker() -> None:
    """Worker processes start with one torch and one BLAS thread (each job then applies its own ``threads``), so
    that W workers keep W threads busy instead of inheriting the parent's count; they exit when the parent dies, and
    quietly on SIGINT while idle (:func:`_on_interrupt`)."""
    _exit_when_parent_dies()
    signal.signal(signal.SIGINT, _on_interrupt)
    torch.set_num_threads(1)
    threadpool_limits(limits=1)


def _compute_quietly(job: Job, root: Path, report: tuple[str, float] | None = None) -> Outcome:
    """A job in a worker: no bar draws; with ``report`` (a folder, seconds), the job's bars keep their counts in
    ``folder/<pid>-<n>.json`` every so many seconds (:func:`pflnb.progress.report_to`), for the parent to show."""
    _BUSY.set()
    try:
        if report is None:
            out = compute(job, root)
        else:
            with bars.report_to(Path(report[0]) / f"{os.getpid()}.json", report[1]):
                out = compute(job, root, progress=True)
    finally:
        _BUSY.clear()
    out.pop("exception", None)  # the traceback text travels; the exception object may not pickle
    return out


# Worker pools kept between execute() calls: spawning a worker imports torch and pflnb (seconds each), and a
# reproduction makes hundreds of calls (each tuning pass, each experiment's verdict seeds). A pool is reused only under
# the environment it was spawned with (workers inherit it at spawn: the pinned kernels, the results folder, ...).
_POOLS: dict[tuple[int, tuple[tuple[str, str], ...]], ProcessPoolExecutor] = {}
_INHERITED = ("PFLNB_", "ATEN_", "MKL_", "ONEDNN_", "OMP_", "CUDA_", "CUBLAS_")


def _pool_key(workers: int) -> tuple[int, tuple[tuple[str, str], ...]]:
    return workers, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_INHERITED)))


def _usable(pool: ProcessPoolExecutor) -> bool:
    """Whether ``pool`` can take jobs: not broken, and no worker gone (one that exited on SIGINT may not be noticed by
    the pool's manager thread yet)."""
    processes = getattr(pool, "_processes", None) or {}
    return not getattr(pool, "_broken", False) and all(p.exitcode is None for p in processes.values())


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """This process's pool of ``workers`` spawned workers for the current environment: the one kept from an earlier
    call, else a new one in place of any other (a pool whose worker died, or spawned under another environment or
    with another number of workers, is not reused; a process keeps at most one pool)."""
    key = _pool_key(workers)
    pool = _POOLS.get(key)
    if pool is None or not _usable(pool):
        for other in list(_POOLS):  # one pool at a time: idle workers hold their memory
            _POOLS.pop(other).shutdown(wait=False, cancel_futures=True)
        ctx = multiprocessing.get_context("spawn")
        pool = _POOLS[key] = ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker)
    return pool


def _drop_pool(workers: int) -> None:
    pool = _POOLS.pop(_pool_key(workers), None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def shutdown_pools() -> None:
    """End every kept worker pool (at exit; a test may call it)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_pools)


REPORT_EVERY_S = 5.0  # how often a worker's run rewrites its round count, and the parent reads them (Processes)


class Processes(Executor):
    """Jobs in ``workers`` spawned processes on this machine, kept between calls (:func:`worker_pool`). A worker
    that dies fails the jobs it had not finished (reported like any failure; the next call spawns a new pool);
    finished ones are kept. ``workers="auto"``: on CUDA as many as the device's memory holds, measured on the work of
    each call (:mod:`pflnb.experiments.gpu_share`), else the CPU cores over the jobs' threads."""

    def __init__(self, workers: int | str) -> None:
        if workers != AUTO and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise ValueError(f"workers must be an integer >= 1 or {AUTO!r}, got {workers!r}")
        self.workers = workers
        self.desc = f"runs ({workers} workers)"

    def __repr__(self) -> str:
        return f"Processes({self.workers!r})"

    def prepare(self, jobs: Sequence[Job]) -> None:
        try:
            pickle.dumps(list(jobs))
        except Exception as e:  # e.g. a lambda as a protocol's transform
            raise ValueError(f"{self!r} needs picklable jobs: {e}") from e

    def outcomes(
        self, jobs: Sequence[Job], root: Path, progress: bool, rounds: Rounds | None = None
    ) -> Iterator[tuple[int, Outcome]]:
        workers = self.workers
        if workers == AUTO and len(jobs) > 1:  # a new shape of CUDA work is measured with no idle pool holding memory
            workers = gpu_share.auto_workers(jobs, release=shutdown_pools, initializer=init_worker)
        if workers == 1 or len(jobs) < 2:  # in this process: the run's own round bar shows its rounds
            yield from Serial().outcomes(jobs, root, progress or rounds is not None)
            return
        pool = worker_pool(workers)
        folder = tempfile.mkdtemp(prefix="pflnb-rounds-") if rounds is not None else None
        report = None if folder is None else (folder, REPORT_EVERY_S)
        futures = {pool.submit(_compute_quietly, job, root, report): i for i, job in enumerate(jobs)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=None if folder is None else REPORT_EVERY_S, return_when=FIRST_COMPLETED)
                if folder is not None:
                    rounds(bars.in_flight(bars.read_reports(folder)))  # type: ignore[misc]
                for fut in done:
                    try:
                        outcome = fut.result()
                    except Exception as err:  # the worker process died (BrokenProcessPool) or the result did not pickle
                        outcome = {"ok": False, "error": f"{type(err).__name__}: {err}"}
                    yield futures[fut], outcome
        except BaseException:  # interrupted: drop the jobs not started and the pool (its running jobs end, unread)
            for f in futures:
                f.cancel()
            _drop_pool(workers)
            raise
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


class Ray(Executor):
    """Jobs as Ray tasks on the cluster at ``address`` (default ``$PFLNB_RAY_ADDRESS``, else a local instance).

    ``resources``: one dict for every job, or a function of the job's config (of the job itself when it has no
    ``cfg``) giving each job's dict (keys ``num_cpus``, ``num_gpus``, ``memory``, ``resources``; defaults from
    ``$PFLNB_RAY_CPUS``/``$PFLNB_RAY_GPUS``). A task whose worker process died is retried ``max_retries`` times
    (default ``$PFLNB_RAY_RETRIES``, else 2), then reported as failed.
    """

    desc = "runs (ray)"

    def __init__(
        self,
        address: str | None = None,
        resources: dict[str, Any] | Callable[[Any], dict[str, Any]] | None = None,
        max_retries: int | None = None,
    ) -> None:
        self.address = address
        self.resources = resources
        self.max_retries = ray_backend.default_max_retries() if max_retries is None else max_retries
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")

    def __repr__(self) -> str:
        return f"Ray(address={self.address!r})"

    def _resources(self, job: Job) -> dict[str, Any]:
        spec = self.resources(getattr(job, "cfg", job)) if callable(self.resources) else (self.resources or {})
        return ray_backend.check_resources(spec)

    def prepare(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            if getattr(job, "keep_final", False):
                raise ValueError("keep_final is not supported on Ray (final states stay on the workers); use Serial or Processes")
            self._resources(job)

    def outcomes(
        self, jobs: Sequence[Job], root: Path, progress: bool, rounds: Rounds | None = None
    ) -> Iterator[tuple[int, Outcome]]:
        import ray  # optional dependency

        per_job = [self._resources(job) for job in jobs]
        ray_backend.connect(self.address or ray_backend.default_address())
        ray_backend.check_fits(per_job, jobs)
        remote = ray.remote(_ray_task)
        pending: dict[Any, int] = {}
        for i, (job, res) in enumerate(zip(jobs, per_job)):
            opts = {k: res[k] for k in ray_backend.RESOURCE_KEYS if k in res}
            threads = task_threads(job, res)
            ref = remote.options(max_retries=self.max_retries, retry_exceptions=False, **opts).remote(job, root, threads)
            pending[ref] = i
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as err:  # the worker died (after the retries) or Ray failed
                        outcome = {"ok": False, "error": f"{type(err).__name__} after {self.max_retries} retries: {err}"}
                    yield i, outcome
        except BaseException:  # interrupted: stop the rest; finished jobs are already cached
            for ref in pending:
                ray.cancel(ref, force=True)
            raise


def task_threads(job: Any, resources: dict[str, Any]) -> int:
    """Torch threads of one Ray task: the job's ``threads`` where it has one, else its whole CPUs (at least 1)."""
    threads = getattr(job, "threads", None)
    if threads:
        return int(threads)
    return max(1, int(resources["num_cpus"]))


def _ray_task(job: Job, root: Path, threads: int) -> Outcome:
    """Body of one Ray task: the job at a fixed thread count, never touching the cache (the driver writes it)."""
    pflnb.set_threads(threads)
    return _compute_quietly(job, root)


AUTO = "auto"  # workers sized from the work: on CUDA from its measured memory (pflnb.experiments.gpu_share)


def parse_workers(text: str, what: str = "workers") -> int | str:
    """A number of worker processes from text: an integer >= 1, or ``auto`` (:data:`AUTO`)."""
    text = str(text).strip()
    if text == AUTO:
        return AUTO
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{what} must be an integer >= 1 or {AUTO!r}, got {text!r}")
    return n


def default_workers() -> int | str:
    """Local worker processes: ``$PFLNB_WORKERS`` if set (a number, or ``auto``), else 1 (jobs run in this process)."""
    return parse_workers(os.environ.get("PFLNB_WORKERS", "1"), "PFLNB_WORKERS")


def make_executor(
    workers: int | str | None = None,
    backend: str | None = None,
    address: str | None = None,
    resources: dict[str, Any] | Callable[[Any], dict[str, Any]] | None = None,
    max_retries: int | None = None,
) -> Executor:
    """The executor named by options, each left out read from the environment: ``backend`` (``$PFLNB_BACKEND``:
    ``local`` or ``ray``); for ``local``, ``workers`` (``$PFLNB_WORKERS``, else 1: :class:`Serial`, more or ``"auto"``:
    :class:`Processes`); for ``ray``, ``address``, ``resources`` and ``max_retries`` (:class:`Ray`). An option that
    does not apply to the backend is an error."""
    backend = ray_backend.default_backend() if backend is None else backend
    if backend == "ray":
        if workers not in (None, 1):
            raise ValueError(f"workers={workers} applies to backend='local'; with backend='ray' choose resources per job")
        return Ray(address, resources, max_retries)
    if backend != "local":
        raise ValueError(f"backend must be one of {ray_backend.BACKENDS}, got {backend!r}")
    if address is not None or resources is not None or max_retries is not None:
        raise ValueError("address, resources and max_retries apply to backend='ray' only")
    workers = default_workers() if workers is None else workers
    return Serial() if workers == 1 else Processes(workers)


def default_executor() -> Executor:
    """The executor the environment names (:func:`make_executor` with every option left out)."""
    return make_executor()


class JobsFailed(RuntimeError):
    """Some jobs failed; every finished one was cached and is in ``records`` (None where failed).

    ``failures`` holds one dict per failed job: ``index`` (position in the input), ``job`` (its details: method,
    seed, key, config, ...), ``key`` and ``error`` (the traceback, or the executor's report of a dead worker).
    """

    def __init__(self, failures: list[dict[str, Any]], records: list[dict[str, Any] | None]) -> None:
        self.failures = failures
        self.records = records
        done = sum(r is not None for r in records)
        lines = [f"{len(failures)} of {len(records)} jobs failed ({done} finished, cached when caching is on):"]
        for f in failures:
            about = f["job"]
            lines.append(f"--- job {f['index']}: {about.get('method')} seed {about.get('seed')} (key {f['key']})")
            lines.append(f"details: {about}")
            lines.append(f["error"].rstrip())
        super().__init__("\n".join(lines))


def _store(job: Job, path: Path, record: dict[str, Any]) -> None:
    """Cache ``record``; on an OSError keep it, marked ``not_cached``, and warn (a result is never lost)."""
    try:
        job.store(path, record)
    except OSError as err:
        record["not_cached"] = not_cached_reason(path, err)
        about = job.describe()
        warnings.warn(f"{about['method']} seed {about['seed']}: {record['not_cached']}", RecordNotCachedWarning, stacklevel=4)


def execute(
    jobs: Sequence[Job],
    executor: Executor | None = None,
    *,
    cache: bool = True,
    force: bool = False,
    root: Path | str | None = None,
    progress: bool = True,
    desc: str | None = None,
    kind: str | None = None,
    experiment: str | None = None,
) -> list[dict[str, Any]]:
    """Every job's record, in input order: cached ones loaded, the others computed on ``executor`` (default:
    :func:`default_executor`) and cached as they arrive.

    ``cache=False`` neither reads nor writes the cache; ``force`` recomputes (and overwrites) cached jobs and drops
    what an interrupted job left to resume from. A bad job (:meth:`~pflnb.experiments.jobs.Job.validate`), an
    executor that cannot run them, or a results folder that cannot be written stops everything before the first job
    starts. A cached record that cannot be read (truncated, malformed, or made under other CPU kernels) does not stop
    the sweep: it is moved aside (kept, never deleted: :func:`~pflnb.experiments.cache.move_aside`), recomputed, and
    one RecordSetAsideWarning at the end lists each with where it was moved. A job that raises does not stop the
    others: at the end :class:`JobsFailed` lists every failure (chained from the first one's exception when it ran in
    this process). A record that could not be written is returned
    with ``not_cached`` set, and one RecordNotCachedWarning lists them all.

    Every job gets one line in the run log (:func:`~pflnb.experiments.cache.log_event`, when ``$PFLNB_RUN_LOG`` is
    set) with this call's ``stage`` (the jobs of one call run together, the next call's after them), ``kind`` (what
    the caller computes: ``tuning``, ``verdict``, ...) and ``experiment`` (the paper's experiment that asked, when
    one did: ``pflnb verify --claim`` draws the records a claim read by it); a computed job's line has its ``seconds``
    (``benchmarks/reproduce_cost.py`` reads them).
    """
    jobs = list(jobs)
    for job in jobs:
        job.validate()
    executor = default_executor() if executor is None else executor
    executor.prepare(jobs)
    base = Path(root) if root is not None else results_root()
    paths = [job.path(base) for job in jobs]
    stage = {"stage": uuid.uuid4().hex[:12], **({"kind": kind} if kind else {})}
    stage.update({"experiment": experiment} if experiment else {})
    out: list[dict[str, Any] | None] = [None] * len(jobs)
    set_aside: list[SetAside] = []
    for i, (job, path) in enumerate(zip(jobs, paths)):
        if cache and not force and job.reads_cache and path.exists():
            try:
                out[i] = job.load(path)
            except ValueError as err:  # truncated, malformed or made under other kernels: keep it aside, recompute
                set_aside.append(SetAside(path, move_aside(path), str(err), job.describe()))
                log_event(
                    "set_aside", job.describe(), **stage, path=str(path), moved_to=str(set_aside[-1].moved), reason=str(err)
                )
    cached = [record is not None for record in out]
    todo = [i for i, hit in enumerate(cached) if not hit]
    held = [jobs[i].describe() for i in todo if kernels.is_held(getattr(jobs[i], "seed", None))]
    if held:  # a perturbed reproduction recomputes verdict seeds only: the held (tuning) records must exist
        raise ValueError(
            f"{len(held)} job(s) on held seeds ({kernels.HOLD_ENV}) have no record of the default kernels to read, e.g. "
            f"{held[0]['method']} seed {held[0]['seed']}; run the pinned reproduction first (make reproduce)"
        )
    if cache:
        for folder in sorted({paths[i].parent for i in todo}):
            check_results_root(folder)  # every result can be kept: checked before the first job starts
    if force:
        for i in todo:
            jobs[i].discard_partial(base)
    failures: list[dict[str, Any]] = []
    first_error: BaseException | None = None
    single = len(todo) == 1 and len(jobs) == 1
    unit_rows = [[todo[p] for p in unit] for unit in stack_groups([jobs[i] for i in todo])]
    units = [unit_job([jobs[i] for i in rows]) for rows in unit_rows]  # a sweep's stackable runs as one program each
    with tqdm(total=len(jobs), desc=desc or executor.desc, disable=not progress or single) as bar:
        for i, hit in enumerate(cached):
            if hit:
                log_event("loaded", jobs[i].describe(), **stage, suffix=jobs[i].suffix)
                bar.update()
        in_flight = (lambda text: bar.set_postfix_str(text)) if progress and not single else None
        for u, unit_outcome in executor.outcomes(units, base, progress and single, rounds=in_flight):
            for index, outcome in zip(unit_rows[u], _unstack(units[u], unit_outcome)):
                job = jobs[index]
                first_error = _take(job, index, outcome, paths[index], cache, out, failures, stage, first_error, single, bar)
    report_not_cached([(jobs[i].describe(), r) for i, r in enumerate(out) if r is not None])
    report_set_aside(set_aside)
    if failures:
        raise JobsFailed(sorted(failures, key=lambda f: f["index"]), out) from first_error
    return out  # type: ignore[return-value]


def _unstack(unit: Job, outcome: Outcome) -> list[Outcome]:
    """The outcome of each run of a :class:`~pflnb.experiments.jobs.StackedRuns` (each record with the unit's
    ``kernels``; the unit's seconds shared out), or ``[outcome]`` for any other job."""
    if not isinstance(unit, StackedRuns):
        return [outcome]
    n = len(unit.jobs)
    seconds = outcome.get("seconds")
    share = None if seconds is None else seconds / n
    if not outcome["ok"]:
        return [{**outcome, "seconds": share}] * n
    records = outcome["record"]["stack"]
    kernels_ = outcome["record"].get("kernels")
    return [{"ok": True, "record": {**r, **({"kernels": kernels_} if kernels_ else {})}, "seconds": share} for r in records]


def _take(
    job: Job,
    index: int,
    outcome: Outcome,
    path: Path,
    cache: bool,
    out: list,
    failures: list,
    stage: dict,
    first_error: BaseException | None,
    single: bool,
    bar: Any,
) -> BaseException | None:
    """Cache and keep one job's outcome, or note its failure; returns the first exception seen."""
    if outcome["ok"]:
        record = outcome["record"]
        if cache:
            _store(job, path, record)
        out[index] = record
        extra = {"not_cached": record["not_cached"]} if record.get("not_cached") else {}
        log_event("computed", job.describe(), **stage, seconds=outcome.get("seconds"), suffix=job.suffix, **extra)
    else:
        error, about = outcome["error"], job.describe()
        first_error = first_error or outcome.get("exception")
        failures.append({"index": index, "job": job.details(), "key": job.key(), "error": error})
        log_event("failed", job.describe(), **stage, error=error.strip().splitlines()[-1], config=job.details())
        if not single:
            bar.write(f"job {index} ({about['method']}, seed {about['seed']}) failed: {error.strip().splitlines()[-1]}")
    about = job.describe()
    bar.set_postfix(method=about["method"], seed=about["seed"], **({"failed": len(failures)} if failures else {}))
    bar.update()
    return first_error
