"""Two `make reproduce`-style executions of the quickstart notebook (smoke profile) from empty caches, one with one
worker and one with two (and different kernel thread counts), write byte-identical figures and equal records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "00_quickstart.ipynb"


def _execute(tmp: Path, workers: int, kernel_threads: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    import papermill as pm

    from pflnb.cli import THREAD_ENV

    figures = tmp / f"figures-{workers}"
    env = {
        "PFLNB_RESULTS": str(tmp / f"results-{workers}"),
        "PFLNB_FIGURES": str(figures),
        "PFLNB_WORKERS": str(workers),
        "PFLNB_PROGRESS": "0",
        "PFLNB_PROFILE": "smoke",
        "MPLBACKEND": "Agg",
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join([str(NOTEBOOK.parents[1]), os.environ.get("PYTHONPATH", "")]),
        **dict.fromkeys(THREAD_ENV, str(kernel_threads)),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = str(tmp / f"out-{workers}.ipynb")
    pm.execute_notebook(str(NOTEBOOK), out, parameters={"profile": "smoke"}, cwd=str(NOTEBOOK.parent), progress_bar=False)
    return figures


@pytest.mark.slow
@pytest.mark.long  # make test-long
def test_quickstart_figures_identical_with_one_and_two_workers(tmp_path, monkeypatch):
    # the kernel's own thread count differs too: runs use their config's thread count wherever they execute
    one = _execute(tmp_path, 1, 2, monkeypatch)
    two = _execute(tmp_path, 2, 1, monkeypatch)
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.suffix in (".png", ".pdf"))
    assert len(files) >= 4, "the quickstart writes its sample grid and learning curves (PNG and PDF)"
    assert files == sorted(p.relative_to(two) for p in two.rglob("*") if p.suffix in (".png", ".pdf"))
    for rel in files:
        assert (one / rel).read_bytes() == (two / rel).read_bytes(), f"{rel} differs between 1 and 2 workers"
    # both executions ran every run from an empty cache, and the records agree to the last bit (timings aside)
    recs = [sorted((tmp_path / f"results-{w}" / "smoke").glob("*.json")) for w in (1, 2)]
    assert len(recs[0]) == 3
    assert [p.name for p in recs[0]] == [p.name for p in recs[1]]
    for a, b in zip(*recs):
        ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
        assert ra["threads"] == rb["threads"] == 1
        assert ra["evals"] == rb["evals"], f"{a.name}: evaluations differ"
        assert [r["client_metrics"] for r in ra["rounds"]] == [r["client_metrics"] for r in rb["rounds"]]
