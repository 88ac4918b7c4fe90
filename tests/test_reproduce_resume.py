"""A killed `pflnb reproduce` resumes: run again, it re-uses every finished run and ends with the outputs of an
uninterrupted run; its log says per notebook what ran, what was loaded and what failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from pflnb.experiments.outputs import same_pixels
from pflnb.experiments.reproduce import LOG_NAME

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / "notebooks" / "00_quickstart.ipynb", ROOT / "notebooks" / "06_baselines.ipynb"]


def _reproduce(base: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "PFLNB_RESULTS": str(base / "results"),
        "PFLNB_FIGURES": str(base / "figures"),
        "PFLNB_WORKERS": "1",
        "PFLNB_PROGRESS": "1",
    }
    cmd = [sys.executable, "-m", "pflnb.cli", "reproduce", "--profile", "smoke", "--quiet", "--out", str(base / "out")]
    return subprocess.Popen(
        [*cmd, *map(str, NOTEBOOKS)], env=env, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _records(base: Path) -> dict[str, dict]:
    """Cached records by file name, without what legitimately differs between two runs (wall-clock times)."""
    out = {}
    for path in sorted((base / "results").rglob("*.json")):
        rec = json.loads(path.read_text())
        for r in rec.get("rounds", []):
            r.pop("time", None)
        out[path.name] = {k: v for k, v in rec.items() if k not in ("wall_time_s", "time", "timings")}
    return out


def _shown(path: Path) -> list:
    """What a reader sees in an executed notebook besides streams (which hold wall times): tables and text results."""
    nb = nbformat.read(path, as_version=4)
    return [
        {k: v for k, v in o.get("data", {}).items() if k in ("text/plain", "text/html")}
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type in ("execute_result", "display_data")
    ]


@pytest.mark.slow
@pytest.mark.long  # make test-long
def test_killed_reproduce_resumes_with_the_uninterrupted_outputs(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert _reproduce(whole).wait(timeout=600) == 0

    proc = _reproduce(killed)
    log = killed / "out" / LOG_NAME
    deadline = time.monotonic() + 600
    while not (log.exists() and "00_quickstart.ipynb: ok" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "reproduce ended before its second notebook"
        time.sleep(0.2)
    time.sleep(2.0)  # inside the second notebook
    assert proc.poll() is None, "the second notebook finished before the kill"
    os.killpg(proc.pid, signal.SIGKILL)  # reproduce, its kernel and the kernel's workers
    proc.wait()
    assert "06_baselines.ipynb: ok" not in log.read_text()

    assert _reproduce(killed).wait(timeout=600) == 0
    runs = log.read_text().split("== pflnb reproduce")[-1]
    assert "00_quickstart.ipynb: ok" in runs and "runs: 0 computed, 3 loaded from the cache" in runs  # nothing redone
    assert "done: 2 notebook(s), 0 failed" in runs

    assert _records(killed) == _records(whole)
    figs = sorted(p.relative_to(whole / "figures") for p in (whole / "figures").rglob("*.png"))
    assert figs and figs == sorted(p.relative_to(killed / "figures") for p in (killed / "figures").rglob("*.png"))
    for rel in figs:
        assert same_pixels((whole / "figures" / rel).read_bytes(), (killed / "figures" / rel).read_bytes()), rel
    for nb in NOTEBOOKS:
        assert _shown(killed / "out" / nb.name) == _shown(whole / "out" / nb.name), nb.name


def test_a_failing_notebook_is_logged_and_the_others_still_run(tmp_path):
    bad = tmp_path / "bad.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("raise RuntimeError('broken on purpose')"),
    ]
    nbformat.write(nb, bad)
    good = tmp_path / "good.ipynb"
    nb.cells = nb.cells[:1] + [nbformat.v4.new_code_cell("print(profile)")]
    nbformat.write(nb, good)
    from pflnb.cli import main

    rc = main(["reproduce", "--profile", "smoke", "--quiet", "--out", str(tmp_path / "out"), str(bad), str(good)])
    assert rc == 1
    log = (tmp_path / "out" / LOG_NAME).read_text()
    assert "bad.ipynb: FAILED" in log and "RuntimeError: broken on purpose" in log
    assert "good.ipynb: ok" in log and "done: 2 notebook(s), 1 failed (bad.ipynb)" in log


def test_runs_append_their_events_to_the_run_log(tmp_path, monkeypatch):
    import importlib

    from pflnb.experiments import profile_config, run

    run_module = importlib.import_module("pflnb.experiments.jobs")
    events = tmp_path / "runs.jsonl"
    monkeypatch.setenv("PFLNB_RUN_LOG", str(events))
    cfg = profile_config("smoke", "digits5-lite", rounds=1, model="tiny-bn-cnn")
    run(cfg, root=tmp_path, progress=False)
    run(cfg, root=tmp_path, progress=False)

    def broken(*a, **k):
        raise RuntimeError("out of memory, say")

    monkeypatch.setattr(run_module, "drive", broken)
    with pytest.raises(RuntimeError):
        run(cfg.replace(seed=7), root=tmp_path, progress=False)
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    assert [x["event"] for x in lines] == ["computed", "loaded", "failed"]
    assert lines[0]["key"] == cfg.key() and lines[2]["seed"] == 7
    assert lines[2]["error"] == "RuntimeError: out of memory, say" and lines[2]["config"]["seed"] == 7


def test_executed_notebooks_hold_their_figures_under_a_non_interactive_backend(tmp_path):
    """`make` exports MPLBACKEND=Agg; the executed notebooks must still show their figures inline."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([0, 1])\nplt.show()"),
    ]
    path = tmp_path / "fig.ipynb"
    nbformat.write(nb, path)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "pflnb.cli", "reproduce", "--profile", "smoke", "--quiet", "--out", str(tmp_path / "out")]
    assert subprocess.run([*cmd, str(path)], env=env, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    out = nbformat.read(tmp_path / "out" / "fig.ipynb", as_version=4)
    assert any("image/png" in o.get("data", {}) for c in out.cells for o in c.get("outputs", []))
