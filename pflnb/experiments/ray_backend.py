"""Sweeps on a Ray cluster: each uncached run is a Ray task; records come back and the driver alone writes the cache.

``run_many(configs, backend="ray")`` lands here. Ray is imported only when this backend runs. The driver (the
process that calls ``run_many``) loads the cached runs, submits one task per uncached run with its own resources
(CPUs, a GPU fraction), and writes each record to the results cache atomically as soon as it comes back, so a
sweep interrupted at any point resumes with its finished runs cached. A run that raises is reported with its
config and traceback and does not stop the others; a worker process that dies is retried by Ray (at most
``max_retries`` times) and then reported; when the sweep ends with failures, one :class:`RunsFailed` lists them
all (after every finished run was cached).

Environment defaults, read when the arguments are left out (notebooks set nothing and get these):

- ``PFLNB_BACKEND``: ``local`` (worker processes on this machine, the default) or ``ray``;
- ``PFLNB_RAY_ADDRESS``: an existing cluster (``auto``, ``host:port`` or ``ray://host:10001``); unset or empty
  starts a local Ray instance sized to this machine (or joins ``RAY_ADDRESS`` if Ray's own variable is set);
- ``PFLNB_RAY_CPUS`` / ``PFLNB_RAY_GPUS``: the CPUs and GPUs (a fraction shares one GPU) each run asks for
  (default 1 CPU, no GPU);
- ``PFLNB_RAY_RETRIES``: how often a run whose worker process died is started again (default 2);
- ``PFLNB_RAY_CONNECT_TIMEOUT``: seconds to wait for a cluster's address to answer before giving up with one clear
  error (default 30).
"""

from __future__ import annotations

import logging
import os
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pflnb.experiments.config import ExperimentConfig
from pflnb.progress import tqdm

BACKENDS = ("local", "ray")
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources")
DEFAULT_MAX_RETRIES = 2
# Ray's raylet waits about 15 s for its helper processes (Python) to report their ports and aborts past that; on a
# machine whose cores are shared by many jobs that can happen, and the next start usually makes it.
START_ATTEMPTS = 3
DEFAULT_CONNECT_TIMEOUT = 30.0  # seconds: how long an address may stay unreachable before the sweep gives up
Resources = dict[str, Any] | Callable[[ExperimentConfig], dict[str, Any]]

# Set when this process started the local Ray instance (then a run asking for more than it has can never start).
_started_local = False


class RunsFailed(RuntimeError):
    """Some runs of a Ray sweep failed; every finished run was cached and is in ``records`` (None where failed).

    ``failures`` holds one dict per failed run: ``index`` (position in the input), ``config`` (its dict),
    ``key`` (the config hash) and ``error`` (the traceback, or Ray's report of the dead worker).
    """

    def __init__(self, failures: list[dict[str, Any]], records: list[dict[str, Any] | None]) -> None:
        self.failures = failures
        self.records = records
        done = sum(r is not None for r in records)
        lines = [f"{len(failures)} of {len(records)} runs failed ({done} finished, cached when caching is on):"]
        for f in failures:
            c = f["config"]
            lines.append(f"--- run {f['index']}: {c['method']} seed {c['seed']} (key {f['key']})")
            lines.append(f"config: {c}")
            lines.append(f["error"].rstrip())
        super().__init__("\n".join(lines))


def default_backend() -> str:
    """Backend of :func:`~pflnb.experiments.run.run_many`: ``$PFLNB_BACKEND`` if set, else ``local``."""
    backend = os.environ.get("PFLNB_BACKEND") or "local"
    if backend not in BACKENDS:
        raise ValueError(f"PFLNB_BACKEND must be one of {BACKENDS}, got {backend!r}")
    return backend


def default_address() -> str | None:
    """Ray cluster to join: ``$PFLNB_RAY_ADDRESS`` if set and not empty, else None (start a local instance)."""
    return os.environ.get("PFLNB_RAY_ADDRESS") or None


def _env_float(name: str, default: float) -> float:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {text!r}") from None


def default_resources() -> dict[str, Any]:
    """Resources each run asks for: ``$PFLNB_RAY_CPUS`` CPUs (default 1) and ``$PFLNB_RAY_GPUS`` GPUs (default 0)."""
    return {"num_cpus": _env_float("PFLNB_RAY_CPUS", 1.0), "num_gpus": _env_float("PFLNB_RAY_GPUS", 0.0)}


def default_max_retries() -> int:
    """Restarts of a run whose worker process died: ``$PFLNB_RAY_RETRIES`` if set, else 2."""
    n = int(os.environ.get("PFLNB_RAY_RETRIES") or DEFAULT_MAX_RETRIES)
    if n < 0:
        raise ValueError(f"PFLNB_RAY_RETRIES must be >= 0, got {n}")
    return n


def check_resources(resources: dict[str, Any]) -> dict[str, Any]:
    """Validate one run's Ray resources (num_cpus, num_gpus, memory, resources) and fill the defaults."""
    if not isinstance(resources, dict):
        raise ValueError(f"resources must be a dict with keys from {RESOURCE_KEYS}, got {resources!r}")
    unknown = set(resources) - set(RESOURCE_KEYS)
    if unknown:
        raise ValueError(f"unknown resources {sorted(unknown)}; allowed: {RESOURCE_KEYS}")
    out = {**default_resources(), **resources}
    for name in ("num_cpus", "num_gpus", "memory"):
        if name in out and (not isinstance(out[name], int | float) or out[name] < 0):
            raise ValueError(f"resources[{name!r}] must be a number >= 0, got {out[name]!r}")
    if out["num_gpus"] > 1 and out["num_gpus"] != int(out["num_gpus"]):
        raise ValueError(f"resources['num_gpus'] above 1 must be a whole number (Ray's rule), got {out['num_gpus']}")
    if "resources" in out and not isinstance(out["resources"], dict):
        raise ValueError(f"resources['resources'] must map custom resource names to amounts, got {out['resources']!r}")
    return out


def run_threads(cfg: ExperimentConfig, resources: dict[str, Any]) -> int:
    """Torch threads of one Ray task: the config's ``threads`` where it has one, else its whole CPUs (at least 1)."""
    threads = getattr(cfg, "threads", None)
    if threads:
        return int(threads)
    return max(1, int(resources["num_cpus"]))


def _machine_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def connect(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address`` (``auto``, ``host:port``, ``ray://...``), or start a local instance.

    A connection this process already has is reused (so ``ray.init(...)`` with your own options, e.g. a
    ``runtime_env``, before calling ``run_many`` wins). A local instance gets ``num_cpus`` (default: the CPUs
    this process may use), no dashboard, warning-level logs and workers at this process's priority, and lives
    until this process ends.
    """
    global _started_local
    import ray

    if ray.is_initialized():
        return
    if address:
        _join(ray, address)
        return
    if num_cpus is not None and num_cpus < 1:
        raise ValueError(f"num_cpus must be >= 1, got {num_cpus}")
    joins_env_cluster = bool(os.environ.get("RAY_ADDRESS"))
    kwargs: dict[str, Any] = {}
    if not joins_env_cluster:
        # Ray lowers its workers' priority by 15 (nice), so that next to other jobs on the cores the runs would get
        # less than their share; the local instance's workers keep this process's priority, like local worker processes.
        kwargs = {"num_cpus": num_cpus or _machine_cpus(), "include_dashboard": False, "_system_config": {"worker_niceness": 0}}
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(logging_level=logging.WARNING, **kwargs)
            break
        except Exception as err:  # Ray raises a bare Exception when its helper processes start too slowly
            if joins_env_cluster or "timed out during startup" not in str(err) or attempt == START_ATTEMPTS:
                raise
            _stop_partial_start()
            warnings.warn(f"Ray's local start timed out (busy machine?); attempt {attempt + 1} of {START_ATTEMPTS}", stacklevel=2)
    _started_local = not joins_env_cluster


def connect_timeout() -> float:
    """Seconds to wait for a cluster address to answer: ``$PFLNB_RAY_CONNECT_TIMEOUT`` if set, else 30."""
    t = _env_float("PFLNB_RAY_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)
    if not t > 0:
        raise ValueError(f"PFLNB_RAY_CONNECT_TIMEOUT must be > 0 seconds, got {t}")
    return t


def cannot_connect(address: str, reason: str) -> ConnectionError:
    """The one error for a cluster that cannot be reached: the address, why, and what to check."""
    return ConnectionError(
        f"cannot reach the Ray cluster at {address!r}: {reason}. Check that a head node runs there (`ray start --head` "
        "prints its address), that the host and port are right and open (a head's GCS port is 6379 by default), and use "
        "ray://HOST:10001 for a Ray Client connection; PFLNB_RAY_CONNECT_TIMEOUT sets how long to wait"
    )


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` or ``ray://host:port`` (None for ``auto``); a malformed address is an error."""
    if address == "auto":
        return None
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"Ray address must be auto, HOST:PORT or ray://HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def wait_reachable(address: str, timeout: float) -> None:
    """Return once ``address`` accepts a TCP connection, retrying until ``timeout`` seconds have passed; then raise
    :func:`cannot_connect` (Ray itself would retry for minutes, printing only its own warnings)."""
    import socket
    import time

    hp = host_port(address)
    if hp is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(hp, timeout=min(5.0, timeout)):
                return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise cannot_connect(address, f"no answer within {timeout:g} s ({err.strerror or err})") from None
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _join(ray: Any, address: str) -> None:
    """``ray.init(address=...)`` after checking, within :func:`connect_timeout`, that the address answers; a failure
    to join raises :func:`cannot_connect` instead of Ray's own traceback."""
    wait_reachable(address, connect_timeout())
    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, TimeoutError, RuntimeError) as err:
        raise cannot_connect(address, str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None


def _stop_partial_start() -> None:
    """End the helper processes that a failed local start left running (this process's children from the ray package)."""
    import psutil
    import ray

    ray_dir = os.path.dirname(ray.__file__)
    for child in psutil.Process().children(recursive=True):
        try:
            if any(ray_dir in part for part in child.cmdline()):
                child.kill()
        except psutil.Error:
            pass
    ray.shutdown()


@contextmanager
def shared_cluster() -> Iterator[None]:
    """While open, notebooks run by this process (papermill kernels) join one local Ray instance started here.

    Does nothing unless ``$PFLNB_BACKEND`` is ``ray`` and no address is set; otherwise starts the instance,
    exports its address as ``$PFLNB_RAY_ADDRESS`` and shuts it down on exit (instead of one start per notebook).
    """
    if default_backend() != "ray" or default_address() is not None or os.environ.get("RAY_ADDRESS"):
        yield
        return
    import ray

    connect(None)
    os.environ["PFLNB_RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
    try:
        yield
    finally:
        os.environ.pop("PFLNB_RAY_ADDRESS", None)
        ray.shutdown()


def _check_fits(per_run: list[dict[str, Any]], configs: list[ExperimentConfig]) -> None:
    """Refuse runs that the local instance can never schedule; warn on a cluster (it may scale up)."""
    import ray

    total = ray.cluster_resources()
    for res, cfg in zip(per_run, configs):
        needs = {"CPU": res["num_cpus"], "GPU": res["num_gpus"], **res.get("resources", {})}
        for name, amount in needs.items():
            if amount > total.get(name, 0):
                has = total.get(name, 0)
                msg = f"a run ({cfg.method}, seed {cfg.seed}) asks for {name}={amount} but the Ray cluster has {has}"
                if _started_local:
                    raise ValueError(msg + "; lower resources (num_cpus/num_gpus) or join a bigger cluster (address=...)")
                warnings.warn(msg + "; it waits until the cluster scales up", stacklevel=3)
                return
    if total.get("GPU", 0) > 0 and any(r["num_gpus"] == 0 and c.device != "cpu" for r, c in zip(per_run, configs)):
        warnings.warn(
            "the Ray cluster has GPUs but runs ask for none (num_gpus=0): Ray does not hide the GPUs from them, so runs "
            "with device='auto' all share the first GPU unaccounted; give each run a share, e.g. resources={'num_gpus': 0.25}",
            stacklevel=3,
        )


def _task(cfg: ExperimentConfig, kwargs: dict[str, Any], threads: int) -> dict[str, Any]:
    """Body of one Ray task: run without the cache at a fixed thread count; return the record or the traceback."""
    import pflnb
    from pflnb.experiments.run import cache_path, run

    pflnb.set_threads(threads)
    try:
        record = run(cfg, cache=False, progress=False, **kwargs)
    except Exception:
        return {"ok": False, "error": traceback.format_exc()}
    if kwargs.get("checkpoint_every"):  # run() keeps its checkpoint when not caching; the run is done, drop it
        ckpt = cache_path(cfg, kwargs.get("root")).with_suffix(".ckpt")
        if ckpt.exists():
            ckpt.unlink()
    return {"ok": True, "record": record}


def run_many_ray(
    configs: list[ExperimentConfig],
    *,
    progress: bool = True,
    address: str | None = None,
    resources: Resources | None = None,
    max_retries: int | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run ``configs`` as Ray tasks (cached ones are loaded here); records in input order; the driver writes the cache.

    ``resources`` is one dict for every run, or a function of the config giving each run's dict (keys
    ``num_cpus``, ``num_gpus``, ``memory``, ``resources``; defaults from ``$PFLNB_RAY_CPUS``/``$PFLNB_RAY_GPUS``).
    ``kwargs`` go to :func:`~pflnb.experiments.run.run` in each task. Raises :class:`RunsFailed` at the end
    when any run failed, after every finished one was cached.
    """
    from pflnb.experiments.run import _cache as cache_record
    from pflnb.experiments.run import cache_path, check_results_root, report_not_cached, run

    if kwargs.get("keep_final"):
        raise ValueError("keep_final is not supported with backend='ray' (final states stay on the workers); use backend='local'")
    max_retries = default_max_retries() if max_retries is None else max_retries
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    resource_fn = resources if callable(resources) else (lambda _cfg, r=resources or {}: r)
    cache, force, root = kwargs.get("cache", True), kwargs.get("force", False), kwargs.get("root")
    todo = [i for i, c in enumerate(configs) if not (cache and not force and cache_path(c, root).exists())]
    per_run = {i: check_resources(resource_fn(configs[i])) for i in todo}
    if cache:
        for folder in sorted({cache_path(configs[i], root).parent for i in todo}):
            check_results_root(folder)  # the driver writes every record: check before any task starts
    out: list[dict[str, Any] | None] = [None] * len(configs)
    failures: list[dict[str, Any]] = []
    with tqdm(total=len(configs), desc="runs (ray)", disable=not progress) as bar:
        todo_set = set(todo)
        for i, cfg in enumerate(configs):
            if i not in todo_set:
                out[i] = run(cfg, progress=False, **kwargs)
                bar.update()
        if not todo:
            return out  # type: ignore[return-value]
        import ray

        connect(address or default_address())
        _check_fits([per_run[i] for i in todo], [configs[i] for i in todo])
        remote = ray.remote(_task)
        task_kwargs = {k: v for k, v in kwargs.items() if k not in ("cache", "force")}
        pending: dict[Any, int] = {}
        for i in todo:
            res = per_run[i]
            opts = {k: res[k] for k in RESOURCE_KEYS if k in res}
            ref = remote.options(max_retries=max_retries, retry_exceptions=False, **opts).remote(
                configs[i], task_kwargs, run_threads(configs[i], res)
            )
            pending[ref] = i
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    cfg = configs[i]
                    try:
                        payload = ray.get(ref)
                    except ray.exceptions.RayError as err:  # the worker died (after the retries) or Ray failed
                        payload = {"ok": False, "error": f"{type(err).__name__} after {max_retries} retries: {err}"}
                    if payload["ok"]:
                        record = payload["record"]
                        if cache:
                            cache_record(cache_path(cfg, root), record)
                        out[i] = record
                    else:
                        failures.append({"index": i, "config": cfg.to_dict(), "key": cfg.key(), "error": payload["error"]})
                        bar.write(f"run {i} ({cfg.method}, seed {cfg.seed}) failed: {payload['error'].strip().splitlines()[-1]}")
                    bar.set_postfix(method=cfg.method, seed=cfg.seed, failed=len(failures))
                    bar.update()
        except BaseException:  # interrupted: stop the rest; finished runs are already cached
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    if failures:
        report_not_cached(out)
        raise RunsFailed(sorted(failures, key=lambda f: f["index"]), out)
    report_not_cached(out)
    return out  # type: ignore[return-value]
