"""Several runs on one GPU at a time, as many as its memory holds, sized from a measured run (``workers="auto"``).

The papers' small models leave most of a GPU's memory idle, even when a stack of runs trains as one program (the
paper-scale guide). ``Processes("auto")`` (``PFLNB_WORKERS=auto``) therefore sizes its pool of worker processes on
the work it is given:

1. :func:`measure` computes the largest unit of engine runs of that work (a run, or a stack of runs), cut to its first
   ``rounds`` rounds, in a fresh spawned process on the unit's CUDA device, and reads what that process took of the
   device: the device's free memory before the process started minus its free memory at the end (the CUDA context,
   the data and the caching allocator's blocks), plus what the allocator had released again from its peak;
2. :func:`runs_per_device` turns that footprint into a number of processes: as many as ``HEADROOM`` of the free
   memory holds, at most one per CPU core (each worker drives its runs from one CPU thread), at least one.

The measurement is kept for the rest of this process, per shape of work (:func:`work_shape`), so that a reproduction's
hundreds of sweeps measure each shape once. Work with no engine run on CUDA (runs on a CPU, FedFac's simulations,
the theory) gets one worker per CPU core: there the cores, not the memory, are what runs share.

A measured footprint cannot see what a later round allocates that the first rounds did not; every method's client
states are made at the start (:meth:`~pflnb.fl.algorithm.Algorithm.init`) and the first round evaluates, so the
first round holds what a round holds. The batched runner sizes its chunks of clients from the free memory it finds
(:class:`~pflnb.fl.runner.BatchedRunner`) and halves them on an out-of-memory error, so that workers started together
share the device rather than fail. :func:`footprint_table` prints what was measured.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

import pflnb
from pflnb.experiments.jobs import Job, RunJob, StackedRuns

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
    """The engine runs ``job`` computes: a run 1, a stack its runs, any other job 0 (nothing :func:`measure` can cut)."""
    if isinstance(job, StackedRuns):
        return len(job.jobs)
    return 1 if isinstance(job, RunJob) else 0


def on_cuda(job: Job) -> bool:
    """Whether ``job`` is engine work on a CUDA device."""
    return engine_runs(job) > 0 and pflnb.device(job.cfg.device).type == "cuda"  # type: ignore[attr-defined]


def cut(job: Job, rounds: int = PROBE_ROUNDS) -> Job:
    """``job`` with each of its engine runs cut to its first ``rounds`` rounds (another key: nothing cached is read
    or written by it) and no checkpoints."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if isinstance(job, StackedRuns):
        return StackedRuns(tuple(cut(j, rounds) for j in job.jobs))  # type: ignore[misc]
    if not isinstance(job, RunJob):
        raise TypeError(f"only engine runs can be cut to their first rounds, not {type(job).__name__}")
    return dataclasses.replace(job, cfg=job.cfg.replace(rounds=min(rounds, job.cfg.rounds)), checkpoint_every=0)


def work_shape(job: Job) -> tuple[Any, ...]:
    """What a footprint depends on: the device, the runs' shape (their stack key, or a run's config but its seed and
    rate) and how many runs train together."""
    first = job.jobs[0] if isinstance(job, StackedRuns) else job
    shape = first.stack_key() or (first.cfg.method, first.cfg.model, first.cfg.data_spec())  # type: ignore[attr-defined]
    return (str(pflnb.device(first.cfg.device)), shape, engine_runs(job))  # type: ignore[attr-defined]


def _probe(job: Job, root: Path) -> dict[str, int]:
    """In the probe process: compute ``job`` and read the device's memory as it holds what the job made."""
    torch.set_num_threads(1)
    device = pflnb.device(job.cfg.device)  # type: ignore[attr-defined]
    torch.cuda.reset_peak_memory_stats(device)
    job.compute(root)
    free, total = torch.cuda.mem_get_info(device)
    return {
        "free_after": free,
        "total": total,
        "peak": torch.cuda.max_memory_reserved(device),
        "held": torch.cuda.memory_reserved(device),
    }


def measure(job: Job, root: Path | str, rounds: int = PROBE_ROUNDS) -> Footprint:
    """The footprint of one worker computing ``job`` (engine runs on CUDA), measured on ``job`` cut to ``rounds``
    rounds (:func:`cut`) in a fresh spawned process. This process initializes CUDA to read the free memory first."""
    if not on_cuda(job):
        raise ValueError(f"measure reads CUDA memory: {job.label()} is not engine work on a CUDA device")
    device = pflnb.device(job.cfg.device)  # type: ignore[attr-defined]
    free, total = torch.cuda.mem_get_info(device)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        got = pool.submit(_probe, cut(job, rounds), Path(root)).result()
    return footprint(free, total, got, engine_runs(job), rounds, str(device))


def footprint(free: int, total: int, probe: dict[str, int], runs: int, rounds: int, device: str) -> Footprint:
    """The footprint from the device's ``free`` memory before the probe process started and what the probe read at
    its end (:func:`_probe`: the free memory then, the allocator's peak and what it still held)."""
    process = free - probe["free_after"] + max(0, probe["peak"] - probe["held"])
    return Footprint(process, probe["peak"], probe["held"], free, total, runs, rounds, device)


_MEASURED: dict[tuple[Any, ...], Footprint] = {}


def auto_workers(units: Sequence[Job], root: Path | str, cores: int | None = None) -> int:
    """Worker processes for ``units``: sized from the footprint of their largest unit of engine runs on CUDA (measured
    once per :func:`work_shape` in this process), else one per CPU core."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    cuda = [u for u in units if on_cuda(u)]
    if not cuda:
        return cores
    largest = max(cuda, key=engine_runs)
    shape = work_shape(largest)
    if shape not in _MEASURED:
        _MEASURED[shape] = measure(largest, root)
    return runs_per_device(_MEASURED[shape], cores)


def footprint_table() -> list[dict[str, Any]]:
    """The footprints measured in this process, one row each (MiB), for a notebook or a log."""
    mib = 1 << 20
    return [
        {
            "device": fp.device,
            "runs": fp.runs,
            "process MiB": round(fp.process / mib, 1),
            "allocator peak MiB": round(fp.peak / mib, 1),
            "context MiB": round(fp.context / mib, 1),
            "free MiB": round(fp.free / mib),
            "workers": runs_per_device(fp, os.cpu_count() or 1),
        }
        for fp in _MEASURED.values()
    ]
