"""What the README, the guides, the CLI help and the notebooks tell a reader holds: every repository path and pflnb
name they mention exists, every link between pages resolves, and the code they show runs and does what they say."""

from __future__ import annotations

import contextlib
import glob
import importlib
import io
import json
import re
import sys
import types
from pathlib import Path

import pytest
import torch
from conftest import make_toy_data

from pflnb import cli
from pflnb.algorithms import REGISTRY, make_algorithm
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.models import build_model

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOP = ("pflnb", "notebooks", "figures", "docs", "tests", "benchmarks", "data", ".ci")
ROOT_FILES = ("README.md", "Makefile", "pyproject.toml", "requirements.txt", "environment.yml")
REPO_PATH = re.compile(rf"^(?:(?:{'|'.join(re.escape(t) for t in TOP)})/[\w./<>*-]*|{'|'.join(map(re.escape, ROOT_FILES))})$")
MODULE_NAME = re.compile(r"^pflnb(?:\.\w+)+$")


def _pattern(token: str) -> str:
    """A mentioned path as a glob: '<paper>' and the like become '*', 'NN_' a two-digit prefix."""
    return re.sub(r"<[^>]+>", "*", token).replace("NN_", "[0-9][0-9]_")


def _mentions(text: str) -> set[str]:
    """Repository paths and pflnb names in backticks, and relative link targets, of a Markdown text."""
    prose = re.sub(r"\{\w+\}`[^`]*`", "", text)  # {doc}`page` names a page of the site: checked separately
    found = {t.rstrip(".,;:") for t in re.findall(r"`([^`\s]+)`", prose)}
    found |= {t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t and not t.startswith("#")}
    return found


def _missing_paths(tokens: set[str], base: Path) -> list[str]:
    missing = []
    for token in sorted(tokens):
        if REPO_PATH.match(token) and not glob.glob(str(ROOT / _pattern(token))):
            missing.append(token)
        elif MODULE_NAME.match(token) and not _resolves(token):
            missing.append(token)
    return missing


def _resolves(name: str) -> bool:
    """True when a dotted pflnb name is a module or an attribute of one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _notebook_markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")


def test_readme_is_a_short_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme) <= 15_000, f"the README has {len(readme)} characters; the guides belong in docs/"
    for section in ("## Set-up: two commands", "## Ten lines of Python", "## Layout", "## Contributing", "make site"):
        assert section in readme
    assert "make check-outputs EXECUTED=1" in readme and "timing*" in readme


def test_every_path_the_readme_names_exists():
    readme = (ROOT / "README.md").read_text()
    mentioned = _mentions(readme)
    assert "docs/ledger.md" in mentioned and "docs/guides/ray.md" in mentioned  # the check sees the links
    assert not _missing_paths(mentioned, ROOT)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_and_page_a_doc_names_exists(path):
    text = path.read_text()
    assert not _missing_paths(_mentions(text), path.parent)
    pages = {p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in DOCS} | {"notebooks/" + p.stem for p in NOTEBOOKS}
    broken = []
    for target in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", text):
        page = target.lstrip("/") if target.startswith("/") else (path.parent / target).relative_to(ROOT / "docs").as_posix()
        if page not in pages:
            broken.append(target)
    for target in re.findall(r"\]\((/[\w/.-]+)\)", text):  # MyST links from the source root, e.g. (/papers/lgmix)
        if target.lstrip("/") not in pages:
            broken.append(target)
    for target in re.findall(r"^(/?[\w./-]+)$", "\n".join(re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)), re.M):
        page = target.lstrip("/") if target.startswith("/") else (path.parent / target).relative_to(ROOT / "docs").as_posix()
        if "*" not in page and not target.startswith(":") and page not in pages:
            broken.append(target)
    assert not broken, f"{path.name} links to missing pages: {broken}"


def test_every_path_the_cli_help_names_exists():
    parser_help = io.StringIO()
    commands = ["list", "run", "sweep", "reproduce", "claims", "check-outputs", "site"]
    for argv in [["--help"], *[[c, "--help"] for c in commands]]:
        with contextlib.redirect_stdout(parser_help), pytest.raises(SystemExit):
            cli.main(argv)
    text = parser_help.getvalue()
    tokens = set(re.findall(r"(?<![\w/])((?:docs|pflnb|figures|notebooks)/[\w./<>-]+\w)", text))
    assert "docs/guides/ray.md" in tokens
    assert not _missing_paths(tokens, ROOT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_path_a_notebook_names_exists(path):
    assert not _missing_paths(_mentions(_notebook_markdown(path)), ROOT)


def test_the_reference_check_sees_a_missing_path():
    assert _missing_paths({"docs/notes-ray.md", "pflnb/papers/<paper>/nothing.py", "pflnb.experiments.nothing"}, ROOT) == [
        "docs/notes-ray.md",
        "pflnb.experiments.nothing",
        "pflnb/papers/<paper>/nothing.py",
    ]
    assert not _missing_paths({"notebooks/NN_<paper>.ipynb", "pflnb.experiments.claims.read_claims"}, ROOT)


def _code_block(path: Path, language: str = "python") -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", path.read_text(), re.S)
    assert blocks, f"{path.name} has no {language} block"
    return blocks[0]


def test_the_readme_example_runs_and_prints_one_row_per_method(tmp_path, monkeypatch):
    code = _code_block(ROOT / "README.md")
    assert len(code.strip().splitlines()) <= 10
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    rows = {line.split()[1]: line for line in lines[1:]}
    assert set(rows) == {"fedavg", "local", "fedbn"}
    assert all(" ± " in row and row.split()[-2] == "2" for row in rows.values())  # mean ± std over 2 seeds
    assert len(list(tmp_path.rglob("*.json"))) == 6  # each run cached by its config's hash


def _run(method, params, data, rounds=3):
    settings = RunSettings(rounds=rounds, optim=OptimConfig(lr=0.05, batch_size=8), progress=False)
    model_fn = lambda: build_model("small-bn-cnn", data.input_shape, data.num_classes)  # noqa: E731
    return run_simulation(make_algorithm(method, params), data, model_fn, settings)


def test_the_guides_new_method_registers_and_is_fedavg_without_momentum():
    """The method written out in docs/guides/extending.md, run as the guide says."""
    code = _code_block(ROOT / "docs" / "guides" / "extending.md")
    assert "fedavgm" not in REGISTRY
    try:
        module = types.ModuleType("pflnb.algorithms.fedavgm")  # as if saved as pflnb/algorithms/fedavgm.py
        sys.modules[module.__name__] = module
        exec(compile(code, "extending.md", "exec"), module.__dict__)
        assert "fedavgm" in REGISTRY
        data = make_toy_data()
        fedavg = _run("fedavg", {}, data)
        plain = _run("fedavgm", {"beta": 0.0}, data)
        momentum = _run("fedavgm", {"beta": 0.9}, data)
        loss = lambda r: torch.tensor([m["loss"] for rnd in r["rounds"] for m in rnd["client_metrics"].values()])  # noqa: E731
        assert torch.allclose(loss(plain), loss(fedavg), rtol=1e-5, atol=1e-6), "beta = 0 is FedAvg"
        assert not torch.allclose(loss(momentum)[-3:], loss(fedavg)[-3:], rtol=1e-3), "momentum changes training"
        with pytest.raises(ValueError, match="beta"):
            make_algorithm("fedavgm", {"beta": 1.0})
    finally:
        REGISTRY.pop("fedavgm", None)
        sys.modules.pop("pflnb.algorithms.fedavgm", None)


def test_the_verdict_rule_guide_shows_the_parts_truth_table_the_code_applies():
    from pflnb.experiments import claims as C

    guide = (ROOT / "docs" / "guides" / "verdict-rule.md").read_text()
    assert C.PARTS_TABLE in guide, "the guide's truth table of claims in parts must be the one parts() applies"
    assert f"chance + {C.FLOOR_MARGIN:g} points" in guide, "the guide states the floor the code applies"
