"""Worker processes of ``run_many`` exit when their parent is killed (SIGKILL: no cleanup in the parent), and stop
quietly when interrupted (SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process table from /proc")

PARENT = textwrap.dedent(
    """
    from pflnb.experiments import Processes, profile_config, run_many

    base = profile_config("smoke", "digits5-lite", rounds=500, model="tiny-bn-cnn")
    run_many([base.replace(seed=s) for s in (0, 1, 2, 3)], executor=Processes(2), progress=False, checkpoint_every=1)
    """
)


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _is_worker(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    env = {**os.environ, "PFLNB_RESULTS": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    parent = subprocess.Popen([sys.executable, "-c", PARENT], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(workers) < 2:
            workers = [p for p in _children(parent.pid) if _is_worker(p)]
            time.sleep(0.5)
        assert len(workers) == 2, "the sweep did not start two workers"
        while time.monotonic() < deadline and len(list(tmp_path.rglob("*.ckpt"))) < 2:
            time.sleep(0.5)  # both workers are training once each has checkpointed a round
        assert len(list(tmp_path.rglob("*.ckpt"))) == 2 and all(_alive(w) for w in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers outlived their killed parent"
    finally:
        for pid in [parent.pid, *workers]:  # only the processes this test started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


INTERRUPTED = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from pflnb.experiments.executors import _compute_quietly, worker_pool
    from pflnb.experiments.jobs import Job

    class Sleep(Job):
        def compute(self, root, progress=False):
            time.sleep(120)
            return {}

    if __name__ == "__main__":
        pool = worker_pool(2)
        for f in [pool.submit(time.sleep, 2) for _ in range(2)]:  # workers are spawned on demand: make both
            f.result()
        procs = dict(pool._processes)
        busy = pool.submit(_compute_quietly, Sleep(), Path("."))
        time.sleep(3)  # one worker is in the job, the other waits for work
        t0 = time.monotonic()
        for pid in procs:
            os.kill(pid, signal.SIGINT)  # what Jupyter does to the kernel's process group
        try:
            busy.result(timeout=60)
            print("busy: finished")
        except KeyboardInterrupt:
            print(f"busy: interrupted after {time.monotonic() - t0:.0f} s")
        time.sleep(2)
        print("workers", len(procs), "exited", sorted(p.exitcode for p in procs.values() if p.exitcode is not None))
        fresh = worker_pool(2)
        print("new pool", fresh is not pool, fresh.submit(os.getpid).result() not in procs)
    """
)


@pytest.mark.slow
def test_interrupted_workers_stop_their_job_and_idle_ones_exit_without_a_traceback(tmp_path):
    """SIGINT to the workers (Jupyter interrupts and shuts down a kernel by signalling its process group): the busy
    worker's job is interrupted at once, the idle worker exits with status 0, nothing prints a traceback, and the next
    call gets a fresh pool."""
    script = tmp_path / "parent.py"
    script.write_text(INTERRUPTED)
    env = {**os.environ, "PFLNB_RESULTS": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("busy: interrupted after ") and int(lines[0].split()[-2]) < 30, out.stdout
    # the idle worker exited with status 0 (the pool, broken by its exit, then ends the other one with SIGTERM)
    assert lines[1].startswith("workers 2 exited [") and "0" in lines[1].split("[")[1].strip("]").split(", "), out.stdout
    assert lines[2] == "new pool True True", out.stdout
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr, out.stderr


def test_a_pool_with_a_worker_gone_is_not_reused_before_the_pool_notices():
    """A worker that exited (on SIGINT, say) makes its pool unusable at once, before the pool's manager thread marks
    it broken: the next call must not hand jobs to it."""
    from types import SimpleNamespace

    from pflnb.experiments.executors import _usable

    alive, gone = SimpleNamespace(exitcode=None), SimpleNamespace(exitcode=0)
    assert _usable(SimpleNamespace(_broken=False, _processes={1: alive, 2: alive}))
    assert not _usable(SimpleNamespace(_broken=False, _processes={1: alive, 2: gone}))
    assert not _usable(SimpleNamespace(_broken="A child process terminated abruptly", _processes={1: alive}))
    assert _usable(SimpleNamespace(_broken=False, _processes=None))  # no worker spawned yet
