"""Run and sweep experiments with a results cache keyed by the config hash."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from pflnb.algorithms import make_algorithm
from pflnb.data import FederatedDataset, build_federated
from pflnb.experiments.config import ExperimentConfig
from pflnb.fl import run_simulation
from pflnb.fl.engine import to_jsonable
from pflnb.models import build_model


def results_root() -> Path:
    """Folder of cached results: ``$PFLNB_RESULTS`` or ``results/`` at the repository root."""
    env = os.environ.get("PFLNB_RESULTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return repo / "results" if (repo / "pyproject.toml").exists() else Path.cwd() / "results"


def cache_path(cfg: ExperimentConfig, root: Path | None = None) -> Path:
    """Where the record of ``cfg`` is cached."""
    return (root or results_root()) / cfg.profile / f"{cfg.method}-{cfg.key()}.json"


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a run record to the cache atomically (a temporary file in the same folder, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


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
) -> dict[str, Any]:
    """Run one experiment, or return its cached record.

    Validates the config before touching data. The record (JSON) holds the config, its key, per-round and
    per-evaluation metrics, internals, timings and the summary. ``keep_final`` keeps the final server and
    client states in the returned record (never cached). ``checkpoint_every`` saves resumable state.
    ``data_hook(data, seed)`` transforms the built dataset (e.g. another evaluation protocol); runs that use
    one must be cached under their own ``root``, since the config hash does not see it.
    """
    cfg.validate()
    path = cache_path(cfg, root)
    if cache and not force and path.exists():
        with open(path) as f:
            record = json.load(f)
        if not keep_final:
            return record
    algorithm = make_algorithm(cfg.method, cfg.method_params)
    data = build_federated(cfg.data_spec(), seed=cfg.seed)
    if data_hook is not None:
        data = data_hook(data, cfg.seed)

    def model_fn():
        return build_model(cfg.model, data.input_shape, data.num_classes)

    ckpt = str(path.with_suffix(".ckpt")) if checkpoint_every else None
    t0 = time.perf_counter()
    record = run_simulation(algorithm, data, model_fn, cfg.settings(progress, ckpt, checkpoint_every))
    record["wall_time_s"] = time.perf_counter() - t0
    record["config"] = cfg.to_dict()
    record["key"] = cfg.key()
    record["data_info"] = to_jsonable({k: v for k, v in data.info.items() if not hasattr(v, "shape")})
    final = record.pop("final")
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
        if ckpt and os.path.exists(ckpt):
            os.remove(ckpt)
    if keep_final:
        record["final"] = final
    return record


def default_workers() -> int:
    """Worker processes for :func:`run_many`: ``$PFLNB_WORKERS`` if set, else 1 (runs in this process)."""
    n = int(os.environ.get("PFLNB_WORKERS", "1"))
    if n < 1:
        raise ValueError(f"PFLNB_WORKERS must be >= 1, got {n}")
    return n


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _run_quiet(cfg: ExperimentConfig, kwargs: dict[str, Any]) -> dict[str, Any]:
    return run(cfg, progress=False, **kwargs)


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
    processes, each with this process's torch thread count. Every run is seeded from its own config, so the
    records equal a serial run's. ``kwargs`` go to :func:`run` and must be picklable when ``workers`` > 1.
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
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    cache, force, root = kwargs.get("cache", True), kwargs.get("force", False), kwargs.get("root")
    todo = [i for i, c in enumerate(configs) if not (cache and not force and cache_path(c, root).exists())]
    if workers == 1 or len(todo) < 2 or kwargs.get("keep_final"):
        records = []
        bar = tqdm(configs, desc="runs", disable=not progress)
        for cfg in bar:
            bar.set_postfix(method=cfg.method, seed=cfg.seed)
            records.append(run(cfg, progress=False, **kwargs))
        return records
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor, as_completed

    import torch

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
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(torch.get_num_threads(),)) as pool:
            futures = {pool.submit(_run_quiet, configs[i], kwargs): i for i in todo}
            try:
                for fut in as_completed(futures):
                    out[futures[fut]] = fut.result()
                    cfg = configs[futures[fut]]
                    bar.set_postfix(method=cfg.method, seed=cfg.seed)
                    bar.update()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    return out  # type: ignore[return-value]


def sweep(
    base: ExperimentConfig,
    methods: Iterable[str] | None = None,
    seeds: Iterable[int] = (0,),
    grid: dict[str, list[Any]] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run ``base`` for every method × seed × grid combination (a grid maps a field to its values)."""
    import itertools

    methods = list(methods) if methods is not None else [base.method]
    grid = grid or {}
    names = list(grid)
    configs = []
    for method in methods:
        for values in itertools.product(*(grid[n] for n in names)):
            for seed in seeds:
                configs.append(base.replace(method=method, seed=seed, **dict(zip(names, values))))
    return run_many(configs, **kwargs)
