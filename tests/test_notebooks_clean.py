"""Committed notebooks are output-free, parameterized and runnable by papermill."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean_and_parameterized(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "strip outputs before committing"
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    src = "".join(params[0]["source"])
    assert "profile" in src and "PFLNB_PROFILE" in src
    assert nb["metadata"].get("kernelspec", {}).get("name"), "a kernelspec lets papermill pick the kernel"


PAPER_NOTEBOOKS = [p for p in NOTEBOOKS if p.name[:2] in ("01", "02", "03", "04", "05")]


@pytest.mark.parametrize("path", PAPER_NOTEBOOKS, ids=lambda p: p.name)
def test_paper_notebooks_share_one_idiom(path):
    """Every paper notebook runs its declared experiments with run_experiment and decides its claims with decide(),
    both on the PAPER of its package, and defines no function and drives no loop of experiments."""
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    package = path.stem.split("_", 1)[1]
    assert f"from pflnb.papers.{package}.paper import" in code and "PAPER" in code
    assert re.search(r"run_experiment\((PAPER|paper), ", code)  # FedFac runs its tuned declaration, paper = tuned(...)
    assert "decide(PAPER, " in code and "write_claims(claims, " in code
    assert "\ndef " not in code and not code.startswith("def ")
    assert "run_many(" not in code, "experiments are declared in paper.py and run with run_experiment"


@pytest.mark.parametrize("path", PAPER_NOTEBOOKS, ids=lambda p: p.name)
def test_paper_notebooks_guard_every_extended_experiment(path):
    """The main scope (extended=False) skips exactly the paper's extended results: every run_experiment of an
    extended experiment sits under `if extended:`, and decide() is told the scope."""
    from importlib import import_module

    nb = json.loads(path.read_text())
    paper = import_module(f"pflnb.papers.{path.stem.split('_', 1)[1]}.paper").PAPER
    assert paper.extended, f"{path.name}: its paper declares no extended results"
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "decide(PAPER, results, extended)" in code
    names = {e.name for e in paper.experiments}
    for cell in (c for c in nb["cells"] if c["cell_type"] == "code"):
        text = "".join(cell["source"])
        for name in re.findall(r'run_experiment\((?:PAPER|paper), "([^"]+)"', text):
            assert name in names
            guarded = text.startswith("if extended:")
            assert guarded == (name in paper.extended), f"{path.name}: {name!r} {'un' if not guarded else ''}guarded"
