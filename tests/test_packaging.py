"""pflnb as research software: a licence, a citation of the package and of the five papers, and a wheel that works
outside the checkout.

The wheel test builds the sdist and the wheel from it with ``python -m build`` (no build isolation: the build backend of
this environment, so no download), installs the wheel into a fresh virtual environment, and runs there, from a
folder outside the checkout, the README's ten lines of Python and ``pflnb notebooks DIR``. The fresh environment gets
its dependencies (torch, ...) by a path to this environment's site-packages, added after its own: pflnb itself is
imported from the wheel (checked), never from the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from pflnb.experiments.claims import PAPERS

ROOT = Path(__file__).resolve().parents[1]


def test_licence_is_mit_and_declared():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()


def test_citation_cites_the_package_and_the_five_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "MIT"
    assert cff["title"].startswith("pflnb") and cff["authors"] and cff["message"]
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert cff["version"] == version
    refs = cff["references"]
    assert len(refs) == len(PAPERS) == 5
    for ref, paper in zip(refs, PAPERS):
        assert ref["title"] and ref["authors"] and ref["type"]
        name = (ROOT / "docs" / "papers" / f"{paper}.md").read_text().splitlines()[0].lstrip("# ").split(" (")[0]
        assert ref["notes"].split(";")[0] == name, f"{paper}: the reference's notes must start with {name!r}"
        assert f"notebooks/0{list(PAPERS).index(paper) + 1}_{paper}.ipynb" in ref["notes"]


def _readme_ten_lines() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Ten lines of Python\s+```python\n(.*?)```", readme, re.S).group(1)
    assert len([line for line in block.splitlines() if line.strip()]) <= 10
    return block


@pytest.mark.packaging
def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_quickstart_outside_the_checkout(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("pflnb-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    )
    (Path(site.stdout.strip()) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True)

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PFLNB_", "PYTHONPATH"))}
    env["PFLNB_WORKERS"] = "2"  # the quickstart's six runs two at a time (run_many's default executor reads it)
    script = "import pflnb, sys\nprint('pflnb from', pflnb.__file__)\n" + _readme_ten_lines()
    quick = subprocess.run([python, "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert quick.returncode == 0, quick.stdout[-3000:] + quick.stderr[-3000:]
    where = quick.stdout.splitlines()[0]
    assert str(venv) in where and str(ROOT) not in where, where
    table = quick.stdout
    assert all(re.search(rf"^\s*\d+\s+{m}\s+\d+\.\d+ ± \d+\.\d+", table, re.M) for m in ("fedavg", "fedbn", "local")), table
    assert len(list((work / "results" / "smoke").glob("*.json"))) == 6, "the runs are cached in the working folder"

    copied = subprocess.run([venv / "bin" / "pflnb", "notebooks", "nbs"], cwd=work, env=env, capture_output=True, text=True)
    assert copied.returncode == 0, copied.stderr
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert [p.name for p in sorted((work / "nbs").glob("*.ipynb"))] == [p.name for p in sources]
    assert all((work / "nbs" / p.name).read_bytes() == p.read_bytes() for p in sources)
