"""The Flower app project under examples/flower/ runs with `flwr run` on the local simulation federation, as a Flower
user runs it, and gives `pflnb run`'s numbers.

The test starts the local SuperLink itself (the command `flwr run` would start, detached, for its `local` connection)
so that it can stop it afterwards; `flwr run` finds it running and submits the app. Flower's home is a temporary
folder, its runtime dependency installation and telemetry are off (the app's dependencies are this environment's).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pflnb import flower as F
from pflnb.experiments.config import profile_config
from pflnb.experiments.run import run

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "flower"
BIN = Path(sys.executable).parent


def test_the_project_is_laid_out_as_flwr_expects():
    from flwr.common.config import get_project_config, validate_config

    config = get_project_config(APP)
    ok, errors, warnings = validate_config(config, check_module=True, project_dir=APP)
    assert ok and not errors and not warnings, (errors, warnings)
    run_config = config["tool"]["flwr"]["app"]["config"]
    assert F.config_from_run_config(run_config) == profile_config("smoke", "digits5-lite", method="fedavg", rounds=2)


@pytest.fixture
def superlink(tmp_path):
    """A local SuperLink in simulation mode (as `flwr run` starts it for the `local` connection), stopped afterwards."""
    from flwr.cli.constant import LOCAL_CONTROL_API_ADDRESS, LOCAL_SUPERLINK_HTTP_API_PORT
    from flwr.common.constant import ISOLATION_MODE_SUBPROCESS

    env = {
        **os.environ,
        "FLWR_HOME": str(tmp_path / "flwr-home"),
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
        "FLWR_DISABLE_UPDATE_CHECK": "1",
        "FLWR_TELEMETRY_ENABLED": "0",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PFLNB_PROFILE": "smoke",
    }
    health = f"http://127.0.0.1:{LOCAL_SUPERLINK_HTTP_API_PORT}/health"
    try:  # nothing else may answer on the port: the test talks to its own SuperLink
        httpx.get(health, timeout=1.0)
        pytest.fail(f"a SuperLink already answers at {health} (a leftover `flower-superlink`? stop it first)")
    except httpx.HTTPError:
        pass
    cmd = [str(BIN / "flower-superlink"), "--insecure", "--simulation", "--isolation", ISOLATION_MODE_SUBPROCESS]
    cmd += ["--control-api-address", LOCAL_CONTROL_API_ADDRESS, "--host", "127.0.0.1", "--port", LOCAL_SUPERLINK_HTTP_API_PORT]
    log = open(tmp_path / "superlink.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(health, timeout=1.0).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "superlink.log").read_text()
            time.sleep(0.25)
        yield env
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the SuperLink and the simulation process it started
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.mark.flower
def test_flwr_run_executes_the_project_with_pflnb_runs_numbers(superlink, tmp_path):
    out = tmp_path / "records"
    cmd = [str(BIN / "flwr"), "run", str(APP), "--stream", "--run-config", f'out="{out}"']
    cmd += ["--federation-config", "num-supernodes=5"]
    done = subprocess.run(cmd, env=superlink, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Successfully started run" in done.stdout
    cfg = profile_config("smoke", "digits5-lite", method="fedavg", rounds=2)
    path = out / f"fedavg-flower-{cfg.key()}.json"
    assert path.exists(), done.stdout + done.stderr
    record = json.loads(path.read_text())
    assert F.same_numbers(run(cfg, cache=False, progress=False), record) == []
