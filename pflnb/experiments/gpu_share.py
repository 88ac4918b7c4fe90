"""Several runs on one GPU at a time, as many as its memory holds, sized from a measured run (``workers="auto"``).

The papers' small models leave most of a GPU's memory idle, even when a stack of runs trains as one program (the
paper-scale guide), and some work never stacks (FedPG's Table 1 runs are P-model jobs, scored on their final states).
``Processes("auto")`` (``PFLNB_WORKERS=auto``) therefore sizes its pool of worker processes on the work it is given:

1. :func:`measure` computes one unit of each shape of that work (a run, a stack of runs, or a job that trains one run,
   :func:`work_shape`), cut to its first ``rounds`` rounds, in a fresh spawned process on the unit's CUDA device with
   a scratch results folder, and reads what that process took of the device: the device's free memory before the
   process started minus its free memory at the end (the CUDA context, the data and the caching allocator's blocks),
   plus what the allocator had released again from its peak. Before it measures, the caller's kept worker pools are
   ended and this process's cached blocks released, so that the free memory is the device's, not an idle pool's;
2. :func:`runs_per_device` turns the largest footprint of the work into a number of processes: as many as
   ``HEADROOM`` of the free memory holds, at most one per CPU core this process may use, at least one.

Each shape is measured once in this process and the decision is printed then. Work with no CUDA job (runs on a CPU,
FedFac's simulations, the theory) gets the CPU cores divided by its jobs' threads. A measurement that fails (the unit
raises, the probe process dies) is warned about and the work runs on one worker, where its own failure is reported.

A measured footprint cannot see what a later round allocates that the first round did not; every method's client
states are made at the start (:meth:`~pflnb.fl.algorithm.Algorithm.init`) and the first round evaluates, so the first
round holds what a round holds. The batched runner sizes its chunks of clients from the free memory it finds (60 %,
:class:`~pflnb.fl.runner.BatchedRunner`): where one run's clients do not fit at once (large models), a lone probe
fills that share and ``auto`` gives one worker, which is then the right answer. :func:`footprint_table` lists what was
measured.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import tempfile
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

import pflnb
from pflnb.experiments.jobs import ConfigJob, Job, StackedRuns, with_checkpoints
from pflnb.experiments.ray_backend import machine_cpus

HEADROOM = 0.8  # the share of the device's free memory the workers may fill together (the rest: fragmentation, peaks)
PROBE_ROUNDS = 1  # rounds a measured unit runs (the first round trains, aggregates and evaluates)


@dataclasses.dataclass(frozen=True)
class Footprint:
    """What one worker process running a unit of work takes of its CUDA device, in bytes.

    ``process``: the device's free memory before the probe process started minus its free memory after the unit ran,
    plus ``peak - held`` (blocks the caching allocator took and released again); ``peak``: the allocator's peak
    (``torch.cuda.max_memory_reserved``); ``held``: what it held at the end; ``free`` and ``total``: the device's free
    and total memory before the probe; ``runs``: the engine runs of the measured unit; ``rounds``: rounds it ran."""

    process: int
    peak: int
    held: int
    free: int
    total: int
    runs: int
    rounds: int
    device: str

    @property
    def context(self) -> int:
        """What the process took beyond the allocator's peak: the CUDA context and libraries (never below 0)."""
        return max(0, self.process - self.peak)


def runs_per_device(footprint: Footprint, cores: int, headroom: float = HEADROOM) -> int:
    """Worker processes that fit on the device: ``floor(headroom × free / process)``, at most ``cores``, at least 1."""
    if not 0.0 < headroom <= 1.0:
        raise ValueError(f"headroom must be in (0, 1], got {headroom}")
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores}")
    if footprint.process <= 0:
        raise ValueError(f"a measured footprint must be positive, got {footprint.process} bytes ({footprint})")
    return max(1, min(cores, math.floor(headroom * footprint.free / footprint.process)))


def engine_runs(job: Job) -> int:
    """The engine runs ``job`` trains: a stack its runs, a job of one config (a run, a P-model or final-states job)
    1, any other job 0 (nothing :func:`measure` can cut)."""
    if isinstance(job, StackedRuns):
        return len(job.jobs)
    return 1 if isinstance(job, ConfigJob) else 0


def on_cuda(job: Job) -> bool:
    """Whether ``job`` trains on a CUDA device."""
    return engine_runs(job) > 0 and pflnb.device(job.cfg.device).type == "cuda"  # type: ignore[attr-defined]


def cut(job: Job, rounds: int = PROBE_ROUNDS) -> Job:
    """``job`` with each of its runs cut to its first ``rounds`` rounds (never longer than it was) and no
    checkpoints."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if isinstance(job, StackedRuns):
        return StackedRuns(tuple(cut(j, rounds) for j in job.jobs))  # type: ignore[misc]
    if not isinstance(job, ConfigJob):
        raise TypeError(f"only jobs of one config can be cut to their first rounds, not {type(job).__name__}")
    short = dataclasses.replace(job, cfg=job.cfg.replace(rounds=min(rounds, job.cfg.rounds)))  # type: ignore[type-var]
    return with_checkpoints(short, 0)


def _plain(value: Any) -> Any:
    return getattr(value, "name", None) or repr(value)  # a protocol by its name


def work_shape(job: Job) -> tuple[Any, ...]:
    """What a footprint depends on: the device, the job's kind, its config but for seed, rate and profile, its other
    fields (protocol, P-model options, ...) and how many runs train together."""
    first: ConfigJob = job.jobs[0] if isinstance(job, StackedRuns) else job  # type: ignore[assignment]
    config = {k: v for k, v in first.cfg.to_dict().items() if k not in ("seed", "lr", "profile")}
    config["method_params"] = {k: v for k, v in first.cfg.method_params.items() if type(v) is not float}  # per row
    fields = [f.name for f in dataclasses.fields(first) if f.name not in ("cfg", "checkpoint_every")]  # type: ignore[arg-type]
    others = {name: _plain(getattr(first, name)) for name in fields}  # a measurement never checkpoints (cut)
    text = json.dumps({"config": config, "job": others}, sort_keys=True, default=repr)
    return (str(pflnb.device(first.cfg.device)), type(first).__name__, text, engine_runs(job))


def _probe(job: Job) -> dict[str, int]:
    """In the probe process: compute ``job`` in a scratch results folder and read the device's memory as it holds
    what the job made."""
    torch.set_num_threads(1)
    device = pflnb.device(job.cfg.device)  # type: ignore[attr-defined]
    torch.cuda.init()  # before the memory statistics: a device named with its index is not started by them
    torch.cuda.reset_peak_memory_stats(device)
    with tempfile.TemporaryDirectory() as scratch:
        job.compute(Path(scratch))
    free, total = torch.cuda.mem_get_info(device)
    return {
        "free_after": free,
        "total": total,
        "peak": torch.cuda.max_memory_reserved(device),
        "held": torch.cuda.memory_reserved(device),
    }


def measure(job: Job, rounds: int = PROBE_ROUNDS, initializer: Callable[[], None] | None = None) -> Footprint:
    """The footprint of one worker computing ``job`` (a CUDA job), measured on ``job`` cut to ``rounds`` rounds
    (:func:`cut`) in a fresh spawned process (started with ``initializer``, e.g. the workers' own). This process starts
    CUDA to read the free memory first, and releases its own cached blocks."""
    if not on_cuda(job):
        raise ValueError(f"measure reads CUDA memory: {job.label()} is not a job on a CUDA device")
    device = pflnb.device(job.cfg.device)  # type: ignore[attr-defined]
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(device)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=initializer) as pool:
        got = pool.submit(_probe, cut(job, rounds)).result()
    return footprint(free, total, got, engine_runs(job), rounds, str(device))


def footprint(free: int, total: int, probe: dict[str, int], runs: int, rounds: int, device: str) -> Footprint:
    """The footprint from the device's ``free`` memory before the probe process started and what the probe read at
    its end (:func:`_probe`: the free memory then, the allocator's peak and what it still held)."""
    process = free - probe["free_after"] + max(0, probe["peak"] - probe["held"])
    return Footprint(process, probe["peak"], probe["held"], free, total, runs, rounds, device)


_MEASURED: dict[tuple[Any, ...], Footprint] = {}
MIB = 1 << 20


def auto_workers(
    units: Sequence[Job],
    cores: int | None = None,
    release: Callable[[], None] | None = None,
    initializer: Callable[[], None] | None = None,
) -> int:
    """Worker processes for ``units``: for CUDA work, the fewest that any of its shapes allows (:func:`runs_per_device`
    of each shape's footprint, measured once per :func:`work_shape` in this process, after ``release()`` has ended
    the caller's idle workers); for other work, the cores over the largest thread count of its jobs."""
    cores = machine_cpus() if cores is None else cores
    cuda = [u for u in units if on_cuda(u)]
    if not cuda:
        threads = max((int(getattr(u, "threads", 1) or 1) for u in units), default=1)
        return max(1, cores // threads)
    shapes = {work_shape(u): u for u in cuda}
    new = [shape for shape in shapes if shape not in _MEASURED]
    if new and release is not None:
        release()
    for shape in new:
        unit = shapes[shape]
        try:
            _MEASURED[shape] = fp = measure(unit, initializer=initializer)
        except Exception as err:  # the unit's own failure is reported by its run; here it only sizes the pool
            warnings.warn(
                f"workers='auto' could not measure {unit.label()} on CUDA ({type(err).__name__}: {err}); "
                "its work runs on one worker",
                stacklevel=2,
            )
            return 1
        print(
            f"[pflnb] workers=auto: a worker running {unit.label()} ({fp.runs} run(s)) takes {fp.process / MIB:.0f} MiB "
            f"of {fp.device}'s {fp.free / MIB:.0f} MiB free: {runs_per_device(fp, cores)} worker(s) fit",
            flush=True,
        )
    return min(runs_per_device(_MEASURED[shape], cores) for shape in shapes)


def footprint_table() -> list[dict[str, Any]]:
    """The footprints measured in this process, one row each (MiB), with the workers they allow here."""
    return [
        {
            "device": fp.device,
            "runs": fp.runs,
            "process MiB": round(fp.process / MIB, 1),
            "allocator peak MiB": round(fp.peak / MIB, 1),
            "context MiB": round(fp.context / MIB, 1),
            "free MiB": round(fp.free / MIB),
            "workers": runs_per_device(fp, machine_cpus()),
        }
        for fp in _MEASURED.values()
    ]
