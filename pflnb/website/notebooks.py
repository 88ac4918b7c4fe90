"""The site's notebooks: which notebook belongs to which paper, and executed notebooks cleaned for the site (progress-bar
residue and the build machine's paths removed, a banner naming the profile they ran at)."""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from pflnb.experiments import claims as C

ROOT = Path(__file__).resolve().parents[2]  # the repository
SITE_DIR = "_site"  # git-ignored: staged sources (src/), the HTML (html/), the browser test's screenshots
GENERATED = "_generated"  # inside the staged sources: Markdown fragments made by this module, included by pages

# CSS class of each verdict category (docs/_static/pflnb.css colours them)
VERDICT_CLASS = {
    C.REPRODUCED: "reproduced",
    C.PARTIAL: "partial",
    C.CONTRADICTED: "contradicted",
    C.INCONCLUSIVE: "inconclusive",
    C.NOT_TESTABLE: "not-testable",
    C.DIVERGED: "diverged",
    C.NOT_RUN: "not-run",
}
PROFILE_NOTES = {
    "smoke": "tiny data, one seed, two or three rounds: it shows every step runs; its numbers are not results",
    "cpu": "the reduced reproduction on a 2-core CPU, several seeds; the committed figures and claims come from it",
    "paper": "the papers' own datasets, models and rounds, on a GPU",
}

# --------------------------------------------------------------------------------------------- notebooks and papers


def notebook_sources(root: Path | None = None) -> list[Path]:
    """The repository's notebooks in reading order (``notebooks/NN_name.ipynb``, sorted by number)."""
    root = ROOT if root is None else root
    return sorted((root / "notebooks").glob("*.ipynb"))


def notebook_key(name: str) -> str:
    """The short name of a notebook: '01_lgmix.ipynb' → 'lgmix' (a paper key of :data:`claims.PAPERS` or not)."""
    stem = Path(name).stem
    return stem.split("_", 1)[1] if "_" in stem and stem.split("_", 1)[0].isdigit() else stem


def paper_notebooks(root: Path | None = None) -> dict[str, str]:
    """Paper key → the stem of its notebook ('lgmix' → '01_lgmix'), in the ledger's paper order."""
    root = ROOT if root is None else root
    stems = {notebook_key(p.name): p.stem for p in notebook_sources(root)}
    return {key: stems[key] for key in C.PAPERS if key in stems}


# ------------------------------------------------------------------------------------ cleaning executed notebooks

_WIDGET = "application/vnd.jupyter.widget-view+json"
_WIDGET_REPR = re.compile(r"^\s*(HBox|VBox|IntProgress|FloatProgress|HTML)\(children=|^\s*(HBox|VBox|FloatProgress)\(")
# tqdm.auto's warning when ipywidgets is absent (two lines: the warning and the import it points at)
_TQDM_WARNING = re.compile(r"^.*TqdmWarning: IProgress not found.*\n(?:\s+from \.autonotebook import .*\n?)?", re.M)


# Warning text in an output: a Python warning (``TqdmWarning: ...``, ``UserWarning: ...``) or a logger's ``WARNING``
_WARNING_TEXT = re.compile(r"\b[A-Z]\w*Warning\b|\bWARNING\b")


def warning_lines(nb: dict) -> list[str]:
    """Every line of warning text in executed notebook ``nb``'s outputs (streams, plain-text results, errors), as
    ``cell N: line``; an executed notebook of the package should have none."""
    found = []
    for i, cell in enumerate(nb.get("cells", [])):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            texts = [_text(out.get("text", "")), _text(out.get("data", {}).get("text/plain", ""))]
            texts += [f"{out.get('ename', '')}: {out.get('evalue', '')}"] if out.get("output_type") == "error" else []
            found += [f"cell {i}: {line.strip()}" for t in texts for line in t.splitlines() if _WARNING_TEXT.search(line)]
    return found


def collapse_redraws(text: str) -> str:
    """Text as a terminal shows it: of each line redrawn with carriage returns only its last drawing is kept."""
    lines = []
    for line in text.split("\n"):
        parts = [p for p in line.split("\r") if p.strip()]
        lines.append(parts[-1] if parts else ("" if "\r" in line else line))
    return "\n".join(lines)


def _path_prefixes(root: Path) -> list[tuple[str, str]]:
    """(absolute prefix, replacement) pairs that strip the build machine's paths: the repository and site-packages."""
    pairs = [(str(root.resolve()) + os.sep, ""), (str(root) + os.sep, "")]
    for p in sys.path:
        if p.endswith("site-packages"):
            pairs.append((p + os.sep, "site-packages/"))
    return sorted(set(pairs), key=lambda pr: -len(pr[0]))


def _strip_paths(text: str, prefixes: Sequence[tuple[str, str]]) -> str:
    for prefix, new in prefixes:
        text = text.replace(prefix, new)
    return text


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def clean_notebook(nb: dict, root: Path | None = None) -> dict:
    """A copy of executed notebook ``nb`` fit to publish: progress-bar residue removed (carriage-return redraws
    collapsed; tqdm's warning that ipywidgets is missing and widget outputs dropped), the build machine's paths made
    relative to the repository. Error outputs are kept: a failed cell must show."""
    root = ROOT if root is None else root
    nb = copy.deepcopy(nb)
    prefixes = _path_prefixes(root)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                text = _TQDM_WARNING.sub("", collapse_redraws(_text(out.get("text", ""))))
                text = _strip_paths(text, prefixes)
                if not text.strip():
                    continue
                out["text"] = text
            elif kind in ("display_data", "execute_result"):
                data = out.get("data", {})
                data.pop(_WIDGET, None)
                plain = _text(data.get("text/plain", ""))
                if _WIDGET_REPR.match(plain) and set(data) <= {"text/plain"}:
                    continue  # a widget's text stand-in ("HBox(children=...)") says nothing to a reader
                if not data:
                    continue
                for mime in ("text/plain", "text/html", "text/markdown"):
                    if mime in data:
                        data[mime] = _strip_paths(_text(data[mime]), prefixes)
            elif kind == "error":
                out["traceback"] = [_strip_paths(line, prefixes) for line in out.get("traceback", [])]
            kept.append(out)
        cell["outputs"] = kept
    return nb


def notebook_banner(profile: str, notebook: str, paper: str | None = None) -> str:
    """The note at the top of an executed notebook's page: the source notebook, the profile it ran at, and where the
    paper's committed claims are."""
    note = PROFILE_NOTES.get(profile, "")
    lines = [
        "```{admonition} Executed notebook",
        ":class: pflnb-banner",
        f"This page is `notebooks/{notebook}.ipynb` as `pflnb reproduce` executed it at the **{profile}** profile"
        + (f" ({note})." if note else "."),
        "Outputs are shown as they were produced; nothing was re-run to build this page.",
    ]
    if paper:
        lines.append(
            f"The claims table at the end of the notebook is this run's; the committed verdicts of the `cpu` profile, "
            f"with their figures, are on the paper's page: [{C.PAPERS[paper]}: claims and verdicts](/papers/{paper})."
        )
    lines.append("```")
    return "\n".join(lines)


def add_banner(nb: dict, banner: str) -> dict:
    """``nb`` with a Markdown cell holding ``banner`` right after its title cell (the first cell)."""
    nb = copy.deepcopy(nb)
    cell = {"cell_type": "markdown", "id": "pflnb-site-banner", "metadata": {}, "source": banner}
    at = 1 if nb.get("cells") and nb["cells"][0].get("cell_type") == "markdown" else 0
    nb.setdefault("cells", []).insert(at, cell)
    return nb
