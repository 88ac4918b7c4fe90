"""Committed notebooks are output-free, parameterized and runnable by papermill."""

import json
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
