"""An unreachable Ray address ends in one clear error within the connection timeout, never a hang or Ray's traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from pflnb.experiments import ray_backend as rb


def _closed_port() -> int:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "address, expected",
    [("auto", None), ("10.0.0.1:6379", ("10.0.0.1", 6379)), ("ray://head.example:10001", ("head.example", 10001))],
)
def test_host_port(address, expected):
    assert rb.host_port(address) == expected


@pytest.mark.parametrize("address", ["nonsense", "host:", ":6379", "host:99999", "ray://host"])
def test_malformed_addresses_are_rejected(address):
    with pytest.raises(ValueError, match="auto, HOST:PORT or ray://HOST:PORT"):
        rb.host_port(address)


def test_unreachable_address_fails_within_the_timeout():
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(ConnectionError) as err:
        rb.wait_reachable(f"127.0.0.1:{port}", timeout=1.5)
    took = time.monotonic() - t0
    assert 1.4 <= took < 10  # it retried until the timeout, then gave up
    text = str(err.value)
    assert f"127.0.0.1:{port}" in text and "ray start --head" in text and "ray://" in text and "1.5 s" in text


def test_reachable_address_returns_at_once():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        t0 = time.monotonic()
        rb.wait_reachable(f"127.0.0.1:{server.getsockname()[1]}", timeout=5)
        assert time.monotonic() - t0 < 2


def test_connect_timeout_from_the_environment(monkeypatch):
    monkeypatch.setenv("PFLNB_RAY_CONNECT_TIMEOUT", "7.5")
    assert rb.connect_timeout() == 7.5
    monkeypatch.setenv("PFLNB_RAY_CONNECT_TIMEOUT", "0")
    with pytest.raises(ValueError, match="PFLNB_RAY_CONNECT_TIMEOUT"):
        rb.connect_timeout()


@pytest.mark.ray
@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_cli_names_the_address_and_exits_2(scheme, tmp_path):
    pytest.importorskip("ray")
    address = f"{scheme}127.0.0.1:{_closed_port()}"
    env = {"PFLNB_RAY_CONNECT_TIMEOUT": "1", "PFLNB_RESULTS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "pflnb.cli", "run", "--method", "fedavg", "--profile", "smoke", "--quiet"]
    t0 = time.monotonic()
    out = subprocess.run(
        [*cmd, "--backend", "ray", "--address", address, "--no-cache"], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 2, out.stderr
    assert time.monotonic() - t0 < 60
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith(f"pflnb: error: cannot reach the Ray cluster at '{address}'")
    assert "Traceback" not in out.stderr
