"""Run and sweep experiments with a results cache keyed by the config hash."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import FederatedDataset, build_federated
from pflnb.experiments.config import ExperimentConfig
from pflnb.fl import run_simulation
from pflnb.fl.engine import to_jsonable
from pflnb.models import build_model
from pflnb.progress import tqdm


def results_root() -> Path:
    """Folder of cached results: ``$PFLNB_RESULTS`` or ``results/`` at the repository root."""
    env = os.environ.get("PFLNB_RESULTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return repo / "results" if (repo / "pyproject.toml").exists() else Path.cwd() / "results"


def cache_path(cfg: ExperimentConfig, root: Path | str | None = None) -> Path:
    """Where the record of ``cfg`` is cached."""
    return Path(root or results_root()) / cfg.profile / f"{cfg.method}-{cfg.key()}.json"


@contextmanager
def thread_limits(threads: int) -> Iterator[None]:
    """Run the enclosed code with ``threads`` torch intra-op threads and at most ``threads`` BLAS/OpenMP threads
    (threadpoolctl); the previous counts are restored afterwards."""
    from threadpoolctl import threadpool_limits

    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    previous = torch.get_num_threads()
    try:
        with threadpool_limits(limits=threads):
            torch.set_num_threads(threads)
            yield
    finally:
        torch.set_num_threads(previous)


class RunDivergedWarning(UserWarning):
    """A run stopped because a training loss or a model state became non-finite (recorded as diverged)."""


class RecordNotCachedWarning(UserWarning):
    """A finished run's record could not be written to the results cache (disk full, permissions, a vanished
    folder): the record is returned (with ``not_cached`` naming the path and the reason) but must be run again."""


def check_results_root(folder: Path | str) -> Path:
    """``folder`` (created if missing) when it is a directory this process can write a file into; else a ValueError
    naming it and the OS's reason, raised before any training starts."""
    folder = Path(folder)
    fix = "choose another folder with $PFLNB_RESULTS (or root=...), or free space / fix the permissions"
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"results folder {folder} is not a directory; {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe.", suffix=".tmp")
        try:
            os.write(fd, b"{}")
            os.fsync(fd)
        finally:
            os.close(fd)
            _remove(probe)
    except OSError as err:
        raise ValueError(f"results folder {folder} is not writable ({err.strerror or err}); {fix}") from None
    return folder


def not_cached_reason(path: Path, err: OSError) -> str:
    """One line for a record that could not be written: the path, the OS's reason, and that it was not cached."""
    return f"could not write {path} ({err.strerror or err}): the record was not cached"


def _cache(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` to the cache; on an OSError keep it, marked ``not_cached``, and warn (never lose the result)."""
    try:
        write_record(path, record)
    except OSError as err:
        record["not_cached"] = not_cached_reason(path, err)
        warnings.warn(
            f"{record.get('config', {}).get('method')} seed {record.get('config', {}).get('seed')}: {record['not_cached']}",
            RecordNotCachedWarning,
            stacklevel=3,
        )


def report_not_cached(records: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """The records of a sweep that were not cached; when there are any, one warning at the end lists them all."""
    lost = [r for r in records if r is not None and r.get("not_cached")]
    if lost:
        lines = "\n".join(f"  {r['config']['method']} seed {r['config']['seed']}: {r['not_cached']}" for r in lost)
        warnings.warn(
            f"{len(lost)} finished run(s) were not cached and must be run again:\n{lines}", RecordNotCachedWarning, stacklevel=3
        )
    return lost


RUN_LOG_ENV = "PFLNB_RUN_LOG"  # a file to which every run appends one JSON line (pflnb reproduce's log reads it)


def log_run(event: str, cfg: ExperimentConfig, **extra: Any) -> None:
    """Append ``{"event", "method", "seed", "key", "profile", ...}`` to ``$PFLNB_RUN_LOG`` when it is set: ``loaded``
    (from the cache), ``computed`` (``not_cached`` when its record could not be written) or ``failed``."""
    target = os.environ.get(RUN_LOG_ENV)
    if not target:
        return
    line = {"event": event, "method": cfg.method, "seed": cfg.seed, "key": cfg.key(), "profile": cfg.profile, **extra}
    with contextlib.suppress(OSError), open(target, "a") as f:  # a log line must never cost a result
        f.write(json.dumps(line) + "\n")


class RunDiverged(RuntimeError):
    """Raised when final states are requested (``keep_final``) from a run that diverged."""


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


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def strict_json(x: Any) -> Any:
    """``x`` as plain JSON values with every non-finite float written as the string "NaN", "Infinity" or
    "-Infinity" (valid JSON for strict parsers; :func:`load_record` reads them back as floats)."""
    x = to_jsonable(x)
    if isinstance(x, float):
        return x if math.isfinite(x) else ("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity"))
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [strict_json(v) for v in x]
    return x


def _decode_nonfinite(x: Any) -> Any:
    if isinstance(x, str):
        return _NONFINITE.get(x, x)
    if isinstance(x, dict):
        return {k: (v if k == "config" else _decode_nonfinite(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [_decode_nonfinite(v) for v in x]
    return x


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as strict JSON to ``path`` through a unique temporary file in the same folder and an atomic
    replace: concurrent writers never collide, and readers see the old or the new file, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(strict_json(obj), f, allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def read_json(path: Path | str) -> Any:
    """A JSON file written by :func:`write_json_atomic`, with "NaN"/"Infinity" strings read back as floats."""
    with open(path) as f:
        return _decode_nonfinite(json.load(f))


def _remove(path: Path | str) -> None:
    with contextlib.suppress(FileNotFoundError):  # another process may have removed it first
        os.remove(path)


def load_record(path: Path, cfg: ExperimentConfig | None = None) -> dict[str, Any]:
    """A cached record, checked: valid JSON, the expected keys, and (given ``cfg``) the config's hash. A bad file
    raises ValueError naming it and what to do."""
    fix = "delete it or re-run with --force (force=True)"
    try:
        with open(path) as f:
            record = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"cached record {path} is truncated or not JSON ({e}); {fix}") from e
    if isinstance(record, dict):
        record = _decode_nonfinite(record)
    problem = None
    if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
        problem = "no 'config'"
    elif cfg is not None and record.get("key") != cfg.key():
        problem = f"key {record.get('key')!r} is not the config's {cfg.key()!r}"
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
        raise ValueError(f"cached record {path} has the wrong shape ({problem}); {fix}")
    return record


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a run record to the cache: strict JSON, atomically (:func:`write_json_atomic`)."""
    write_json_atomic(path, record)


def run(
    cfg: ExperimentConfig,
    *,
    cache: bool = True,
    force: bool = False,
    progress: bool = True,
    checkpoint_every: int = 0,
    keep_final: bool = False,
    root: Path | None = None,
    data_hook: Callable[[FederatedDataset, int], FederatedDataset] | None = None,
    warn: bool = True,
    check_root: bool = True,
) -> dict[str, Any]:
    """Run one experiment, or return its cached record.

    Validates the config before touching data. The record (JSON) holds the config, its key, per-round and
    per-evaluation metrics, internals, timings and the summary. ``keep_final`` keeps the final server and
    client states in the returned record (never cached). ``checkpoint_every`` saves resumable state (tagged with
    the config hash); ``force`` ignores both the cached record and any checkpoint, and every run that ends
    removes its checkpoint. ``data_hook(data, seed)`` transforms the built dataset (e.g. another evaluation
    protocol); runs that use one must be cached under their own ``root``, since the config hash does not see it.
    The run executes with ``cfg.threads`` torch and BLAS threads (restored afterwards); the record holds the
    thread count (``threads``) and the device (``device``) it ran with, ``status`` ("finished" or "diverged")
    and ``wall_time_s`` summed over resumes. A run whose losses or states become non-finite stops and is
    recorded (and cached) with status "diverged", a ``divergence`` entry (round, client, quantity) and no
    summary; a RunDivergedWarning says so (``warn``), and ``keep_final`` raises RunDiverged.
    Before training, the results folder must be writable (``check_root``; :func:`check_results_root`); a record
    that still cannot be written after training (disk full, permissions) is returned with ``not_cached`` set and a
    RecordNotCachedWarning, never lost.
    """
    cfg.validate()
    if not isinstance(checkpoint_every, int) or isinstance(checkpoint_every, bool) or checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be an integer >= 0, got {checkpoint_every!r}")
    path = cache_path(cfg, root)
    ckpt = path.with_suffix(".ckpt")
    if cache and not force and path.exists():
        record = load_record(path, cfg)
        log_run("loaded", cfg)
        if is_diverged(record):
            if warn:
                warnings.warn(f"{describe_divergence(record)} (cached in {path})", RunDivergedWarning, stacklevel=2)
            if keep_final:
                raise RunDiverged(f"{describe_divergence(record)}; it has no final states (cached in {path})")
            return record
        if not keep_final:
            return record
    if force:
        _remove(ckpt)  # start from scratch
    if cache and check_root:
        check_results_root(path.parent)  # before any training: a run whose result cannot be kept is not started
    with thread_limits(cfg.threads):
        algorithm = make_algorithm(cfg.method, cfg.method_params)
        data = build_federated(cfg.data_spec(), seed=cfg.seed)
        if data_hook is not None:
            data = data_hook(data, cfg.seed)

        def model_fn():
            return build_model(cfg.model, data.input_shape, data.num_classes)

        settings = cfg.settings(progress, str(ckpt) if checkpoint_every else None, checkpoint_every)
        settings.checkpoint_tag = cfg.key()
        with pflnb.determinism(cfg.deterministic):  # CUDA determinism controls for the run (no effect on CPU results)
            try:
                record = run_simulation(algorithm, data, model_fn, settings)
            except Exception as err:
                log_run("failed", cfg, error=f"{type(err).__name__}: {err}", config=cfg.to_dict())
                raise
        record["threads"] = torch.get_num_threads()
    record["device"] = settings.device
    record["status"] = "diverged" if "divergence" in record else "finished"
    record["config"] = cfg.to_dict()
    record["key"] = cfg.key()
    record["data_info"] = to_jsonable({k: v for k, v in data.info.items() if not hasattr(v, "shape")})
    final = record.pop("final", None)
    if cache:
        _cache(path, record)
    log_run("computed", cfg, **({"not_cached": record["not_cached"]} if record.get("not_cached") else {}))
    _remove(ckpt)  # a run that ended (finished or diverged) leaves no checkpoint, cached or not
    if is_diverged(record):
        if warn:
            where = f"recorded in {path}" if cache else "not cached (cache=False)"
            warnings.warn(f"{describe_divergence(record)}; {where}", RunDivergedWarning, stacklevel=2)
        if keep_final:
            raise RunDiverged(f"{describe_divergence(record)}; it has no final states")
    elif keep_final:
        record["final"] = final
    return record


def default_workers() -> int:
    """Worker processes for :func:`run_many`: ``$PFLNB_WORKERS`` if set, else 1 (runs in this process)."""
    text = os.environ.get("PFLNB_WORKERS", "1")
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"PFLNB_WORKERS must be an integer >= 1, got {text!r}") from None
    if n < 1:
        raise ValueError(f"PFLNB_WORKERS must be >= 1, got {n}")
    return n


PARENT_DIED_EXIT = 75  # exit status of a worker whose parent process died


def _exit_when_parent_dies() -> None:
    """Start a daemon thread that ends this (spawned) process as soon as its parent process is gone: it waits on
    multiprocessing's parent sentinel (a pipe on POSIX, a process handle on Windows), so it needs no polling."""
    import multiprocessing
    import multiprocessing.connection
    import threading

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(PARENT_DIED_EXIT)  # no cleanup: the parent that would collect the result is gone

    threading.Thread(target=watch, name="pflnb-parent-watchdog", daemon=True).start()


def _init_worker() -> None:
    """Worker processes start with one torch and one BLAS thread (each run then applies its config's ``threads``),
    so that W workers keep W threads busy instead of inheriting the parent's count; they exit when the parent dies."""
    from threadpoolctl import threadpool_limits

    _exit_when_parent_dies()
    torch.set_num_threads(1)
    threadpool_limits(limits=1)


def _run_quiet(cfg: ExperimentConfig, kwargs: dict[str, Any]) -> dict[str, Any]:
    return run(cfg, progress=False, **{**kwargs, "warn": False, "check_root": False})  # the parent reports divergence


def run_many(
    configs: Iterable[ExperimentConfig],
    *,
    progress: bool = True,
    workers: int | None = None,
    backend: str | None = None,
    address: str | None = None,
    resources: Any = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run several configs (cached ones are loaded) with one progress bar; records come back in input order.

    ``workers`` > 1 (default: ``$PFLNB_WORKERS``, else 1) runs the uncached configs in that many spawned
    processes; every run executes with its config's ``threads`` (default 1) wherever it runs. Every run is
    seeded from its own config, so the records equal a serial run's. ``kwargs`` go to :func:`run` and must be
    picklable when ``workers`` > 1. Workers exit as soon as this process dies. Diverged runs come back as their
    records (``status`` "diverged") with a RunDivergedWarning each.
    ``backend="ray"`` (default: ``$PFLNB_BACKEND``, else ``local``) runs each uncached config as a task on the
    Ray cluster at ``address`` with per-run ``resources``; see :mod:`pflnb.experiments.ray_backend`.
    """
    from pflnb.experiments import ray_backend

    configs = list(configs)
    for cfg in configs:  # fail on any bad config before the first run starts
        cfg.validate()
    backend = ray_backend.default_backend() if backend is None else backend
    if backend == "ray":
        if workers not in (None, 1):
            raise ValueError(f"workers={workers} applies to backend='local'; with backend='ray' choose resources per run")
        return ray_backend.run_many_ray(configs, progress=progress, address=address, resources=resources, **kwargs)
    if backend != "local":
        raise ValueError(f"backend must be one of {ray_backend.BACKENDS}, got {backend!r}")
    if address is not None or resources is not None:
        raise ValueError("address and resources apply to backend='ray' only")
    workers = default_workers() if workers is None else workers
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    cache, force, root = kwargs.get("cache", True), kwargs.get("force", False), kwargs.get("root")
    todo = [i for i, c in enumerate(configs) if not (cache and not force and cache_path(c, root).exists())]
    if cache:
        for folder in sorted({cache_path(configs[i], root).parent for i in todo}):
            check_results_root(folder)  # every run's result can be kept, checked before the first one starts
    if workers == 1 or len(todo) < 2 or kwargs.get("keep_final"):
        records = []
        bar = tqdm(configs, desc="runs", disable=not progress)
        for cfg in bar:
            bar.set_postfix(method=cfg.method, seed=cfg.seed)
            # the folders were checked above; a disk that fills later costs that run's cache entry, not the sweep
            records.append(run(cfg, progress=False, **{**kwargs, "check_root": False}))
        report_not_cached(records)
        return records
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor, as_completed

    try:
        pickle.dumps(kwargs)
    except Exception as e:  # e.g. a lambda as data_hook
        raise ValueError(f"run_many with workers={workers} needs picklable arguments: {e}") from e
    out: list[dict[str, Any] | None] = [None] * len(configs)
    todo_set = set(todo)
    with tqdm(total=len(configs), desc=f"runs ({workers} workers)", disable=not progress) as bar:
        for i, cfg in enumerate(configs):
            if i not in todo_set:
                out[i] = run(cfg, progress=False, **kwargs)
                bar.update()
        ctx = multiprocessing.get_context("spawn")
        n = min(workers, len(todo))
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker) as pool:
            futures = {pool.submit(_run_quiet, configs[i], kwargs): i for i in todo}
            try:
                for fut in as_completed(futures):
                    out[futures[fut]] = record = fut.result()
                    if is_diverged(record) and kwargs.get("warn", True):
                        warnings.warn(describe_divergence(record), RunDivergedWarning, stacklevel=2)
                    cfg = configs[futures[fut]]
                    bar.set_postfix(method=cfg.method, seed=cfg.seed)
                    bar.update()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    report_not_cached(out)
    return out  # type: ignore[return-value]


def sweep(
    base: ExperimentConfig,
    methods: Iterable[str] | None = None,
    seeds: Iterable[int] = (0,),
    grid: dict[str, list[Any]] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run ``base`` for every method × seed × grid combination (a grid maps a field to its values); a repeated
    method, seed or grid value is an error (it would count one run twice)."""
    import itertools

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
