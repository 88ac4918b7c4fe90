"""Every notebook at the smoke profile on CUDA (marked ``gpu``; skipped without CUDA).

Runs nbmake in a subprocess with ``PFLNB_DEVICE=cuda`` and a fresh results cache, so that no record cached by a
CPU run stands in for a GPU run (the cache key does not include the device). The notebooks' exact identities
(e.g. Fed-CO2's online model = FedBN) are asserted by the notebooks themselves; on CUDA they hold because every
run uses the determinism controls (``ExperimentConfig.deterministic``, ``pflnb.determinism``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_runs_on_cuda_at_the_smoke_profile(notebook, tmp_path):
    env = {
        **os.environ,
        "PFLNB_DEVICE": "cuda",
        "PFLNB_PROFILE": "smoke",
        "PFLNB_PROGRESS": "0",
        "PFLNB_RESULTS": str(tmp_path / "results"),
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake", "--nbmake-timeout=1200"]
    proc = subprocess.run(
        [*cmd, str(REPO / "notebooks" / notebook)], cwd=REPO, env=env, capture_output=True, text=True, timeout=3600
    )
    assert proc.returncode == 0, f"{notebook} failed on CUDA:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
