"""The Ray cluster behind :class:`pflnb.experiments.executors.Ray`: connecting, resources, and their defaults.

Ray is imported only when a Ray executor runs. The executor submits one task per uncached job with its own
resources (CPUs, a GPU fraction); the driver (the process that calls ``execute``/``run_many``) writes each record
to the cache as it comes back, so a sweep interrupted at any point resumes with its finished jobs cached. A worker
process that dies is retried by Ray (at most ``max_retries`` times) and then reported with the other failures.

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
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pflnb import kernels

BACKENDS = ("local", "ray")
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources")
DEFAULT_MAX_RETRIES = 2
# Ray's raylet waits about 15 s for its helper processes (Python) to report their ports and aborts past that; on a
# machine whose cores are shared by many jobs that can happen, and the next start usually makes it.
START_ATTEMPTS = 3
DEFAULT_CONNECT_TIMEOUT = 30.0  # seconds: how long an address may stay unreachable before the sweep gives up

# Set when this process started the local Ray instance (then a run asking for more than it has can never start).
_started_local = False


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


def machine_cpus() -> int:
    """The CPU cores this process may use (its affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def kernel_env() -> dict[str, Any]:
    """The runtime environment every Ray worker gets: the pinned CPU kernels' variables (:mod:`pflnb.kernels`), which
    a worker on another node does not inherit from this process, and the mode with its held seeds."""
    env = {**kernels.settings(), kernels.ENV: kernels.mode()}
    if os.environ.get(kernels.HOLD_ENV):
        env[kernels.HOLD_ENV] = os.environ[kernels.HOLD_ENV]
    return {"env_vars": env}


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
        kwargs = {"num_cpus": num_cpus or machine_cpus(), "include_dashboard": False, "_system_config": {"worker_niceness": 0}}
    kwargs["runtime_env"] = kernel_env()
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
        ray.init(address=address, logging_level=logging.WARNING, runtime_env=kernel_env())
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


def check_fits(per_job: Sequence[dict[str, Any]], jobs: Sequence[Any]) -> None:
    """Refuse jobs that the local instance can never schedule; warn on a cluster (it may scale up)."""
    import ray

    total = ray.cluster_resources()
    for res, job in zip(per_job, jobs):
        needs = {"CPU": res["num_cpus"], "GPU": res["num_gpus"], **res.get("resources", {})}
        for name, amount in needs.items():
            if amount > total.get(name, 0):
                has = total.get(name, 0)
                about = job.describe()
                msg = f"a job ({about['method']}, seed {about['seed']}) asks for {name}={amount} but the Ray cluster has {has}"
                if _started_local:
                    raise ValueError(msg + "; lower resources (num_cpus/num_gpus) or join a bigger cluster (address=...)")
                warnings.warn(msg + "; it waits until the cluster scales up", stacklevel=3)
                return
    if total.get("GPU", 0) > 0 and any(
        r["num_gpus"] == 0 and getattr(getattr(j, "cfg", None), "device", "auto") != "cpu" for r, j in zip(per_job, jobs)
    ):
        warnings.warn(
            "the Ray cluster has GPUs but runs ask for none (num_gpus=0): Ray does not hide the GPUs from them, so runs "
            "with device='auto' all share the first GPU unaccounted; give each run a share, e.g. resources={'num_gpus': 0.25}",
            stacklevel=3,
        )
