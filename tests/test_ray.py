"""run_many(executor=Ray()) on a local Ray instance (2 CPUs, no dashboard), started once for this module.

The tests marked ``ray`` need the ``ray`` package; ``pytest -m "not ray"`` skips them. The others check argument
handling without starting Ray.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import pytest

from pflnb import kernels
from pflnb.experiments import EvalProtocol, JobsFailed, Ray, RunJob, Serial, cache_path, make_executor, run, run_many
from pflnb.experiments import ray_backend as rb
from pflnb.experiments.baselines import baseline_config
from pflnb.experiments.executors import task_threads


def _configs():
    base = baseline_config("smoke", "feature-shift")  # digits5-lite 8 px, tiny CNN, one round
    return [base.replace(method=m, seed=s) for m in ("fedavg", "local") for s in (0, 1)]


def _comparable(record):
    """The record as cached (JSON) without its timing fields, which differ between any two runs."""
    r = json.loads(json.dumps(record))
    r.pop("wall_time_s")
    for entry in r["rounds"]:
        entry.pop("time")
    return r


# Test-only data hooks: they run inside the Ray tasks (pickled by value, see the fixture).
def _raise_on_seed(bad_seed, data, seed):
    if seed == bad_seed:
        raise RuntimeError(f"boom in seed {seed}")
    return data


def _die(marker_dir, once_seed, always_seed, data, seed):
    """Kill the worker process: once for ``once_seed`` (a marker file remembers), every time for ``always_seed``."""
    marker = Path(marker_dir) / f"died-{seed}"
    if seed == always_seed or (seed == once_seed and not marker.exists()):
        with open(marker, "a") as f:
            f.write("x")
        os._exit(1)
    return data


def _record_threads(out_dir, data, seed):
    import torch

    (Path(out_dir) / f"threads-{seed}").write_text(f"{torch.get_num_threads()} {os.nice(0)}")
    return data


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the hooks above, in the workers
    rb.connect(None, num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def serial():
    return [_comparable(r) for r in run_many(_configs(), cache=False, progress=False, executor=Serial())]


@pytest.mark.ray
def test_ray_sweep_equals_serial_with_part_cached(cluster, serial, tmp_path):
    configs = _configs()
    run(configs[2], root=tmp_path, progress=False)  # cached beforehand: loaded by the driver, not a task
    before = cache_path(configs[2], tmp_path).stat().st_mtime_ns
    records = run_many(configs, root=tmp_path, progress=False, executor=Ray())
    assert [r["config"] for r in records] == [c.to_dict() for c in configs]  # input order kept
    assert [_comparable(r) for r in records] == serial
    for cfg, ref in zip(configs, serial):  # the driver wrote every record, exactly as a serial run caches it
        assert _comparable(json.loads(cache_path(cfg, tmp_path).read_text())) == ref
    assert cache_path(configs[2], tmp_path).stat().st_mtime_ns == before
    assert not list(tmp_path.rglob("*.tmp"))
    again = run_many(configs, root=tmp_path, progress=False, executor=Ray())  # all cached now
    assert [_comparable(r) for r in again] == serial


@pytest.mark.ray
def test_failed_run_is_reported_and_others_cached(cluster, serial, tmp_path):
    configs = _configs()[:2]
    hook = EvalProtocol("raise-on-seed-1", functools.partial(_raise_on_seed, 1))  # the identity for seed 0
    with pytest.raises(JobsFailed) as info:
        run_many(configs, root=tmp_path, progress=False, executor=Ray(), protocol=hook)
    err = info.value
    assert [f["index"] for f in err.failures] == [1]
    assert err.failures[0]["job"]["config"] == configs[1].to_dict()
    assert "Traceback" in err.failures[0]["error"] and "boom in seed 1" in err.failures[0]["error"]
    key = RunJob(configs[1], hook).key()
    assert "1 of 2 jobs failed" in str(err) and f"key {key}" in str(err)
    assert err.records[1] is None and _comparable(err.records[0]) == {
        **serial[0],
        "key": RunJob(configs[0], hook).key(),
        "protocol": hook.name,
    }
    assert cache_path(configs[0], tmp_path, hook).exists() and not cache_path(configs[1], tmp_path, hook).exists()


@pytest.mark.ray
def test_dead_worker_is_retried_then_reported(cluster, serial, tmp_path):
    configs = _configs()[:2]
    hook = EvalProtocol("die", functools.partial(_die, str(tmp_path), 0, 1))  # seed 0 dies once, seed 1 on every try
    with pytest.raises(JobsFailed) as info:
        run_many(configs, root=tmp_path / "results", progress=False, executor=Ray(max_retries=1), protocol=hook)
    err = info.value
    expected = {**serial[0], "key": RunJob(configs[0], hook).key(), "protocol": hook.name}
    assert (tmp_path / "died-0").read_text() == "x"  # killed once, then the retry finished
    assert _comparable(err.records[0]) == expected
    assert _comparable(json.loads(cache_path(configs[0], tmp_path / "results", hook).read_text())) == expected
    assert (tmp_path / "died-1").read_text() == "xx"  # the first try and one retry
    assert [f["index"] for f in err.failures] == [1] and "after 1 retries" in err.failures[0]["error"]
    assert not cache_path(configs[1], tmp_path / "results", hook).exists()


@pytest.mark.ray
def test_per_run_resources_threads_priority_and_unfit_runs(cluster, tmp_path):
    configs = [c.replace(threads=1 + c.seed) for c in _configs()[:2]]  # each run executes with its config's threads
    hook = EvalProtocol("record-threads", functools.partial(_record_threads, str(tmp_path)))
    resources = lambda cfg: {"num_cpus": 1 + cfg.seed}  # noqa: E731
    run_many(configs, cache=False, progress=False, executor=Ray(resources=resources), protocol=hook)
    nice = os.nice(0)  # the workers of the local instance keep the driver's priority (Ray's default lowers it by 15)
    assert [(tmp_path / f"threads-{s}").read_text() for s in (0, 1)] == [f"1 {nice}", f"2 {nice}"]
    with pytest.raises(ValueError, match="GPU=1"):
        run_many(configs, cache=False, progress=False, executor=Ray(resources={"num_gpus": 1}))
    with pytest.raises(ValueError, match="CPU=3"):
        run_many(configs, cache=False, progress=False, executor=Ray(resources={"num_cpus": 3}))


@pytest.mark.ray
def test_notebook_kernel_joins_the_cluster_named_in_the_environment(cluster, serial, tmp_path):
    """What `make reproduce BACKEND=ray` does: the kernel's run_many reads PFLNB_BACKEND and PFLNB_RAY_ADDRESS."""
    import subprocess

    address = cluster.get_runtime_context().gcs_address
    code = (
        "from pathlib import Path\n"
        "import ray\n"
        "from pflnb.experiments import run_many\n"
        "from pflnb.experiments.baselines import baseline_config\n"
        f"run_many([baseline_config('smoke', 'feature-shift')], root=Path({str(tmp_path)!r}), progress=False)\n"
        "print('joined', ray.get_runtime_context().gcs_address)\n"
    )
    path = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PFLNB_BACKEND": "ray", "PFLNB_RAY_ADDRESS": address, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"joined {address}" in out.stdout
    cfg = _configs()[0]
    assert _comparable(json.loads(cache_path(cfg, tmp_path).read_text())) == serial[0]


def test_backend_arguments_are_checked_before_any_run(monkeypatch, tmp_path):
    configs = _configs()[:1]
    with pytest.raises(ValueError, match="backend must be one of"):
        make_executor(backend="dask")
    with pytest.raises(ValueError, match="address, resources and max_retries"):
        make_executor(backend="local", address="auto")
    with pytest.raises(ValueError, match="keep_final"):
        Ray().prepare([RunJob(configs[0], keep_final=True)])
    with pytest.raises(ValueError, match="unknown resources"):
        run_many(configs, executor=Ray(resources={"gpus": 1}), root=tmp_path)
    with pytest.raises(ValueError, match="whole number"):
        run_many(configs, executor=Ray(resources={"num_gpus": 1.5}), root=tmp_path)
    monkeypatch.setenv("PFLNB_BACKEND", "ray")  # notebooks pick the backend from the environment
    with pytest.raises(ValueError, match="workers=2 applies to backend='local'"):
        make_executor(workers=2)
    monkeypatch.setenv("PFLNB_RAY_GPUS", "half")
    with pytest.raises(ValueError, match="PFLNB_RAY_GPUS"):
        run_many(configs, root=tmp_path)
    monkeypatch.setenv("PFLNB_BACKEND", "spark")
    with pytest.raises(ValueError, match="PFLNB_BACKEND"):
        run_many(configs, root=tmp_path)
    assert not list(tmp_path.rglob("*.json"))


def test_task_threads_follow_the_config_then_the_cpu_share():
    import types

    cfg = _configs()[0]
    assert task_threads(RunJob(cfg), {"num_cpus": 3}) == cfg.threads == 1  # the config's threads, whatever the share
    assert task_threads(RunJob(cfg.replace(threads=2)), {"num_cpus": 1}) == 2
    no_threads = types.SimpleNamespace()  # a job without a thread setting: its whole CPUs, at least 1
    assert task_threads(no_threads, {"num_cpus": 0.5}) == 1
    assert task_threads(no_threads, {"num_cpus": 3}) == 3


def test_local_start_is_tried_again_when_ray_times_out(monkeypatch):
    ray = pytest.importorskip("ray")
    calls = []

    def fake_init(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise Exception("The current node timed out during startup. ...")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    monkeypatch.setattr(rb, "_stop_partial_start", lambda: calls.append("stopped"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.warns(UserWarning, match="attempt 2 of 3"):
        rb.connect(None, num_cpus=2)
    assert calls[1] == "stopped" and calls[0] == calls[2] == {
        "logging_level": 30,
        "num_cpus": 2,
        "include_dashboard": False,
        "_system_config": {"worker_niceness": 0},
        "runtime_env": {"env_vars": {**kernels.settings(), kernels.ENV: kernels.mode()}},  # workers pin the kernels too
    }
    monkeypatch.setattr(ray, "init", lambda **kw: (_ for _ in ()).throw(Exception("timed out during startup")))
    with pytest.raises(Exception, match="timed out during startup"), pytest.warns(UserWarning):
        rb.connect(None, num_cpus=2)
