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
