"""Several runs per GPU, sized from measured memory (pflnb.experiments.gpu_share): the arithmetic from a footprint to
a number of workers, the measured unit cut to its first rounds, ``workers="auto"`` from the environment, the CLI and
the executor, and (marked gpu) a measurement on CUDA."""

from __future__ import annotations

import pytest
import torch

from pflnb.experiments import Processes, RunJob, Serial, execute, profile_config
from pflnb.experiments import executors as X
from pflnb.experiments import gpu_share as G
from pflnb.experiments.jobs import StackedRuns

GIB, MIB = 1 << 30, 1 << 20


def _fp(process: int, free: int = 80 * GIB) -> G.Footprint:
    return G.Footprint(
        process=process, peak=process // 2, held=process // 4, free=free, total=141 * GIB, runs=1, rounds=1, device="cuda:0"
    )


def test_workers_are_what_the_free_memory_holds_within_the_headroom_capped_by_the_cores():
    # 0.8 × 80 GiB = 64 GiB over 3 GiB a process: 21 processes (21.33 rounded down)
    assert G.runs_per_device(_fp(3 * GIB), cores=32) == 21
    assert G.runs_per_device(_fp(3 * GIB), cores=16) == 16  # one CPU thread drives each worker
    assert G.runs_per_device(_fp(3 * GIB), cores=32, headroom=0.5) == 13  # 40 GiB / 3 GiB
    assert G.runs_per_device(_fp(100 * GIB), cores=16) == 1  # one does not fit: still one, which will say so itself
    with pytest.raises(ValueError, match="headroom"):
        G.runs_per_device(_fp(GIB), cores=4, headroom=0.0)
    with pytest.raises(ValueError, match="positive"):
        G.runs_per_device(_fp(0), cores=4)
    with pytest.raises(ValueError, match="cores"):
        G.runs_per_device(_fp(GIB), cores=0)


def test_the_footprint_is_the_free_memory_the_probe_took_plus_what_its_allocator_released():
    probe = {"free_after": 9 * GIB, "peak": 600 * MIB, "held": 400 * MIB}
    fp = G.footprint(10 * GIB, 141 * GIB, probe, runs=3, rounds=1, device="cuda:0")
    assert fp.process == GIB + 200 * MIB  # 10 − 9 GiB held at the end, and 200 MiB released from the peak
    assert fp.context == GIB + 200 * MIB - 600 * MIB  # beyond the allocator's peak: the CUDA context
    assert (fp.free, fp.total, fp.runs) == (10 * GIB, 141 * GIB, 3)


def _smoke(**kw):
    return profile_config("smoke", "digits5-lite", **kw)


def test_a_measured_unit_is_cut_to_its_first_rounds_under_another_key():
    run = RunJob(_smoke(rounds=2, seed=3), checkpoint_every=1)
    short = G.cut(run, rounds=1)
    assert (short.cfg.rounds, short.cfg.seed, short.checkpoint_every) == (1, 3, 0)
    assert short.key() != run.key()  # nothing cached is read or overwritten by the probe
    assert G.cut(run, rounds=5).cfg.rounds == 2  # never longer than the run
    stack = StackedRuns(tuple(RunJob(_smoke(rounds=2, seed=s, runner="stacked")) for s in (0, 1, 2)))
    cut_stack = G.cut(stack)
    assert [j.cfg.rounds for j in cut_stack.jobs] == [1, 1, 1] and [j.cfg.seed for j in cut_stack.jobs] == [0, 1, 2]
    assert G.engine_runs(stack) == 3 and G.engine_runs(run) == 1
    with pytest.raises(TypeError, match="only engine runs"):
        G.cut(_NotARun())
    with pytest.raises(ValueError, match="rounds"):
        G.cut(run, rounds=0)


class _NotARun(X.Job):
    profile = "smoke"

    def key(self):
        return "not-a-run"

    def label(self):
        return "not-a-run"


def test_work_without_a_cuda_run_gets_one_worker_per_core_and_is_never_measured(tmp_path):
    units = [RunJob(_smoke(device="cpu")), _NotARun()]
    assert not any(G.on_cuda(u) for u in units)
    assert G.auto_workers(units, tmp_path, cores=3) == 3
    with pytest.raises(ValueError, match="CUDA"):
        G.measure(units[0], tmp_path)


def test_cuda_work_is_measured_once_per_shape_on_its_largest_unit(tmp_path, monkeypatch):
    measured = []

    def fake_measure(job, root):
        measured.append(G.engine_runs(job))
        return _fp(GIB * G.engine_runs(job), free=10 * GIB)

    monkeypatch.setattr(G, "measure", fake_measure)
    monkeypatch.setattr(G, "on_cuda", lambda job: True)
    monkeypatch.setattr(G, "_MEASURED", {})
    one = RunJob(_smoke(seed=9, runner="stacked"))
    stack = StackedRuns(tuple(RunJob(_smoke(seed=s, runner="stacked")) for s in (0, 1)))
    assert G.auto_workers([one, stack], tmp_path, cores=16) == 4  # 0.8 × 10 GiB over the stack's 2 GiB
    assert G.auto_workers([stack, one], tmp_path, cores=16) == 4
    assert measured == [2]  # the larger unit, once


def test_workers_auto_reaches_the_executor_from_the_environment_and_the_cli(monkeypatch):
    monkeypatch.setenv("PFLNB_WORKERS", "auto")
    executor = X.make_executor()
    assert isinstance(executor, Processes) and executor.workers == "auto"
    monkeypatch.setenv("PFLNB_WORKERS", "several")
    with pytest.raises(ValueError, match="'auto'"):
        X.make_executor()
    with pytest.raises(ValueError, match="'auto'"):
        Processes("all")
    from pflnb.cli import _workers

    assert (_workers("auto"), _workers("3")) == ("auto", 3)
    with pytest.raises(Exception, match="integer >= 1"):
        _workers("0")


def test_auto_sizes_the_pool_from_the_units_it_is_given(tmp_path, monkeypatch):
    seen = []

    def sized(units, root):
        seen.append(len(units))
        return 1  # one worker: the units run in this process

    monkeypatch.setattr(G, "auto_workers", sized)
    configs = [_smoke(seed=s) for s in (0, 1)]
    auto = execute([RunJob(c) for c in configs], Processes("auto"), root=tmp_path / "a", progress=False)
    serial = execute([RunJob(c) for c in configs], Serial(), root=tmp_path / "s", progress=False)
    assert seen == [2]
    assert [r["summary"] for r in auto] == [r["summary"] for r in serial]


@pytest.mark.gpu
def test_a_measured_cuda_footprint_holds_the_allocators_peak_and_a_context(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    stack = StackedRuns(tuple(RunJob(_smoke(seed=s, device="cuda", runner="stacked")) for s in (0, 1, 2)))
    fp = G.measure(stack, tmp_path)
    assert 0 < fp.peak <= fp.process < fp.free
    assert fp.context > 0  # a CUDA context is not free
    assert G.runs_per_device(fp, cores=16) >= 1
