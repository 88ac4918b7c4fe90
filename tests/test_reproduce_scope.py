"""`pflnb reproduce --scope`: the main scope passes extended=False to the notebooks that declare it, and only to those."""

from __future__ import annotations

import json

import pytest

from pflnb.experiments.reproduce import notebook_parameters_for


def _notebook(path, parameters: str):
    tags = {"tags": ["parameters"]}
    cell = {"id": "p", "cell_type": "code", "metadata": tags, "source": parameters, "outputs": [], "execution_count": None}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}
    path.write_text(json.dumps({**nb, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_scope_sets_extended_where_a_notebook_declares_it(tmp_path):
    paper = _notebook(tmp_path / "paper.ipynb", 'profile = "cpu"\nextended = True\n')
    plain = _notebook(tmp_path / "plain.ipynb", 'profile = "cpu"\n')
    assert notebook_parameters_for(paper, "cpu", "main") == {"profile": "cpu", "extended": False}
    assert notebook_parameters_for(paper, "smoke", "all") == {"profile": "smoke", "extended": True}
    assert notebook_parameters_for(plain, "cpu", "main") == {"profile": "cpu"}
    with pytest.raises(ValueError, match="scope must be one of"):
        notebook_parameters_for(paper, "cpu", "quick")


def test_the_main_scope_writes_its_figures_beside_its_notebooks_never_into_the_committed_ones(tmp_path, monkeypatch):
    """`pflnb reproduce --scope main` executes with extended=False and points the notebooks' figure folder at
    <out>/figures, so a partial ledger never overwrites figures/."""
    from pflnb import plots
    from pflnb.cli import THREAD_ENV, main

    for var in (*THREAD_ENV, "PFLNB_PROGRESS_MODE", "PFLNB_FIGURES"):
        monkeypatch.setenv(var, "")  # restored after the test (the command sets them for its kernels)
    nb = _notebook(tmp_path / "toy.ipynb", 'profile = "cpu"\nextended = True\n')
    cell = {"id": "w", "cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cell["source"] = (
        "from pflnb import plots\n"
        'folder = plots.figure_dir("scope-test", profile)\n'
        "folder.mkdir(parents=True, exist_ok=True)\n"
        '(folder / "claims.csv").write_text(f"extended={extended}")\n'
    )
    data = json.loads(nb.read_text())
    data["cells"].append(cell)
    nb.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(["reproduce", str(nb), "--scope", "main", "--quiet", "--out", str(out)]) == 0
    assert (out / "figures" / "scope-test" / "claims.csv").read_text() == "extended=False"
    assert not (plots.FIGURES / "scope-test").exists()
