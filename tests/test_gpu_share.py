"""Several runs per GPU, sized from measured memory (pflnb.experiments.gpu_share): the arithmetic from a footprint to
a number of workers, the measured unit cut to its first rounds, ``workers="auto"`` from the environment, the CLI and
the executor, and (marked gpu) a measurement on CUDA."""

from __future__ import annotations

import pytest
import torch

from pflnb.experiments import EvalProtocol, Processes, RunJob, Serial, execute, profile_config
from pflnb.experiments import executors as X
from pflnb.experiments import gpu_share as G
from pflnb.experiments.jobs import StackedRuns
from pflnb.papers.fedpg.experiments import PModelJob

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


def test_a_measured_unit_is_cut_to_its_first_rounds():
    run = RunJob(_smoke(rounds=2, seed=3), checkpoint_every=1)
    short = G.cut(run, rounds=1)
    assert (short.cfg.rounds, short.cfg.seed, short.checkpoint_every) == (1, 3, 0)
    assert G.cut(run, rounds=5).cfg.rounds == 2  # never longer than the run
    stack = StackedRuns(tuple(RunJob(_smoke(rounds=2, seed=s, runner="stacked")) for s in (0, 1, 2)))
    cut_stack = G.cut(stack)
    assert [j.cfg.rounds for j in cut_stack.jobs] == [1, 1, 1] and [j.cfg.seed for j in cut_stack.jobs] == [0, 1, 2]
    pm = PModelJob(_smoke(rounds=2, method="fedpg"), fresh=True)  # a job that trains one run and scores it
    assert G.cut(pm).cfg.rounds == 1 and G.cut(pm).fresh
    assert (G.engine_runs(stack), G.engine_runs(run), G.engine_runs(pm), G.engine_runs(_NotARun())) == (3, 1, 1, 0)
    with pytest.raises(TypeError, match="only jobs of one config"):
        G.cut(_NotARun())
    with pytest.raises(ValueError, match="rounds"):
        G.cut(run, rounds=0)


def test_a_shape_is_the_work_but_its_seed_and_rate():
    base = G.work_shape(RunJob(_smoke(seed=0, lr=0.1)))
    assert G.work_shape(RunJob(_smoke(seed=7, lr=0.3))) == base
    assert G.work_shape(RunJob(_smoke(seed=0, lr=0.1), checkpoint_every=5)) == base  # a measurement never checkpoints
    assert G.work_shape(RunJob(_smoke(seed=0, lr=0.1, batch_size=64))) != base
    assert G.work_shape(RunJob(_smoke(seed=0, lr=0.1), protocol=EvalProtocol("swap", lambda d, s: d))) != base
    assert G.work_shape(PModelJob(_smoke(seed=0, lr=0.1))) != base  # another kind of job
    stack = StackedRuns(tuple(RunJob(_smoke(seed=s, runner="stacked")) for s in (0, 1)))
    assert G.work_shape(stack)[-1] == 2  # how many runs train together


class _NotARun(X.Job):
    profile = "smoke"
    threads = 1

    def key(self):
        return "not-a-run"

    def label(self):
        return "not-a-run"


def test_work_without_a_cuda_job_gets_the_cores_over_its_threads_and_is_never_measured(tmp_path, monkeypatch):
    units = [RunJob(_smoke(device="cpu")), _NotARun()]
    assert not any(G.on_cuda(u) for u in units)
    with pytest.raises(ValueError, match="CUDA"):
        G.measure(units[0])
    monkeypatch.setattr(G, "measure", lambda *a, **k: pytest.fail("measured CPU work"))
    assert G.auto_workers(units, cores=3) == 3
    assert G.auto_workers([RunJob(_smoke(device="cpu", threads=2))], cores=5) == 2


@pytest.fixture
def fake_cuda(monkeypatch):
    """Every job counts as CUDA work; measure returns 1 GiB a run of 10 GiB free (runs with batch 64: 3 GiB a run)."""
    measured = []

    def fake_measure(job, initializer=None):
        measured.append(G.work_shape(job))
        first = job.jobs[0] if isinstance(job, StackedRuns) else job
        per_run = 3 * GIB if first.cfg.batch_size == 64 else GIB
        return _fp(per_run * G.engine_runs(job), free=10 * GIB)

    monkeypatch.setattr(G, "measure", fake_measure)
    monkeypatch.setattr(G, "on_cuda", lambda job: True)
    monkeypatch.setattr(G, "_MEASURED", {})
    return measured


def test_cuda_work_is_measured_once_per_shape_and_sized_by_its_largest_footprint(fake_cuda):
    released = []
    stack = StackedRuns(tuple(RunJob(_smoke(seed=s, runner="stacked")) for s in (0, 1)))
    one, wide = RunJob(_smoke(seed=9)), RunJob(_smoke(seed=9, batch_size=64))
    assert G.auto_workers([one, stack], cores=16, release=lambda: released.append(1)) == 4  # 0.8 × 10 GiB / 2 GiB
    assert len(fake_cuda) == 2 and released == [1]  # both shapes, after the idle pools were ended
    assert G.auto_workers([stack, RunJob(_smoke(seed=3))], cores=16, release=lambda: released.append(1)) == 4
    assert len(fake_cuda) == 2 and released == [1]  # nothing new: nothing measured or ended
    assert G.auto_workers([one, wide], cores=16) == 2  # the 3 GiB run decides: 8 GiB / 3 GiB
    assert G.auto_workers([one], cores=16) == 8


def test_a_measurement_that_fails_warns_and_runs_the_work_on_one_worker(monkeypatch):
    def broken(job, initializer=None):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(G, "measure", broken)
    monkeypatch.setattr(G, "on_cuda", lambda job: True)
    monkeypatch.setattr(G, "_MEASURED", {})
    with pytest.warns(UserWarning, match="could not measure .*out of memory.*one worker"):
        assert G.auto_workers([RunJob(_smoke(seed=s)) for s in (0, 1)], cores=16) == 1


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

    def sized(units, release=None, initializer=None):
        seen.append((len(units), release is X.shutdown_pools, initializer is X.init_worker))
        return 1  # one worker: the units run in this process

    monkeypatch.setattr(G, "auto_workers", sized)
    configs = [_smoke(seed=s) for s in (0, 1)]
    auto = execute([RunJob(c) for c in configs], Processes("auto"), root=tmp_path / "a", progress=False)
    serial = execute([RunJob(c) for c in configs], Serial(), root=tmp_path / "s", progress=False)
    assert seen == [(2, True, True)]
    assert [r["summary"] for r in auto] == [r["summary"] for r in serial]


@pytest.mark.gpu
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_a_measured_cuda_footprint_holds_the_allocators_peak_and_a_context(device):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    stack = StackedRuns(tuple(RunJob(_smoke(seed=s, device=device, runner="stacked")) for s in (0, 1, 2)))
    fp = G.measure(stack)
    assert 0 < fp.peak <= fp.process < fp.free
    assert fp.context > 0  # a CUDA context is not free
    assert G.runs_per_device(fp, cores=16) >= 1


@pytest.mark.gpu
def test_auto_workers_on_cuda_give_the_records_of_one_worker(tmp_path, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    monkeypatch.setattr(G, "_MEASURED", {})
    jobs = [RunJob(_smoke(seed=s, device="cuda", runner="batched")) for s in (0, 1)]
    assert G.auto_workers(jobs, cores=2) == 2  # two smoke runs fit on any GPU
    auto = execute(jobs, Processes("auto"), root=tmp_path / "a", progress=False)
    one = execute(jobs, Serial(), root=tmp_path / "s", progress=False)
    assert [r["summary"] for r in auto] == [r["summary"] for r in one]
