"""The reproductions' website (``make site``): executed notebooks, the claims ledger, the guides and the API reference.

The site is a static HTML book built by Sphinx with MyST-NB from ``docs/`` (the hand-written pages and guides) and
from what the code produced, staged into one source folder (``_site/src``, git-ignored) by :func:`stage`:

* the executed notebooks of a profile (``executed/<profile>/``, written by ``pflnb reproduce``), rendered without
  re-execution after :func:`clean_notebook` has removed progress-bar residue and the build machine's paths, each with
  a banner naming the profile it ran at (:func:`notebook_banner`);
* generated Markdown (``_generated/``): per paper its claims table and its figures next to the claims they support
  (:func:`paper_claims_markdown`), the ledger across the five papers (:func:`ledger_markdown`), the count table
  (:func:`counts_markdown`) and the registry's methods (:func:`methods_markdown`). Claims are read only through
  :func:`pflnb.experiments.claims.read_claims` from ``figures/<paper>/claims.csv``, the source of ``pflnb claims``;
* the figures (PNG) of ``figures/`` and an offline MathJax (from the ``jupyter-server-mathjax`` package).

:func:`build` stages and runs ``sphinx-build``; nothing in the built site needs a server or the network.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.algorithms import describe_methods
from pflnb.experiments import claims as C
from pflnb.experiments.paper import EDGE_STEPS

ROOT = Path(__file__).resolve().parents[1]
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


# ------------------------------------------------------------------------------------- docstrings for the API pages

# spans reStructuredText must keep as they are: ``literals``, :roles:`targets`, `interpreted text` and `links`_
_RST_KEEP = re.compile(r"``.+?``|:[\w:+.-]+:`[^`]+`|`[^`]+`_{0,2}")
_RST_REF_END = re.compile(r"(?<=\w)_(?=$|[^\w])")  # 'word_' is a reference to the target 'word' in rST
_RST_SINGLE_STAR = re.compile(r"(?<!\*)\*(?!\*)")


def _rst_safe_text(text: str) -> str:
    text = text.replace("|", "\\|")  # |x| is a substitution in rST, a norm or an absolute value in our docstrings
    text = _RST_REF_END.sub("\\\\_", text)
    if len(_RST_SINGLE_STAR.findall(text)) % 2:  # an unpaired '*' (as in f(*args)) is not emphasis
        text = _RST_SINGLE_STAR.sub("\\\\*", text)
    return text


def rst_safe(line: str) -> str:
    """A docstring line of plain prose made safe for reStructuredText: characters that rST would read as markup but
    the docstrings mean literally ('|x|', 'F5_', an unpaired '*') are escaped outside literals and roles."""
    bullet = re.match(r"\s*[*+-] ", line)  # a list item's bullet is markup the docstring means
    head, line = (line[: bullet.end()], line[bullet.end() :]) if bullet else ("", line)
    out, last = [head], 0
    for m in _RST_KEEP.finditer(line):
        out += [_rst_safe_text(line[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join(out) + _rst_safe_text(line[last:])


def rst_safe_docstring(app: object, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """Sphinx ``autodoc-process-docstring`` hook: :func:`rst_safe` on every line, in place (the API reference)."""
    lines[:] = [rst_safe(line) for line in lines]


# ------------------------------------------------------------------------------ which figures support which claims

_REF_KINDS = {"fig": "fig", "figure": "fig", "figs": "fig", "figures": "fig", "table": "table", "tables": "table"}
_REF_KINDS |= {"thm": "thm", "theorem": "thm", "theorems": "thm", "lemma": "lemma", "lemmas": "lemma"}
_NUM = r"\d+(?:\.\d+)?[a-z]?(?:\([a-z]\))?"
_TEXT_REF = re.compile(
    rf"\b(Figs?|Figures?|Tables?|Thm|Theorems?|Lemmas?)\.?\s*({_NUM}(?:\s*(?:,|/|&|and|–|-)\s*{_NUM})*)", re.IGNORECASE
)
_FILE_REF = re.compile(r"(?:^|_)(fig|tables?|thm|theorem|lemma)(\d+[a-z]?(?:_\d+[a-z]?)*)(?=_|$)")


def _norm_number(token: str) -> tuple[str, str]:
    """'4.3' → ('43', ''), '5(a)' → ('5', 'a'), '2a' → ('2', 'a')."""
    token = token.replace("(", "").replace(")", "").replace(".", "").lower()
    m = re.fullmatch(r"(\d+)([a-z]?)", token)
    return (m.group(1), m.group(2)) if m else (token, "")


def text_refs(text: str) -> set[tuple[str, str, str]]:
    """The figures, tables, theorems and lemmas a claim's text names, as (kind, number, letter): 'Tables 1–3' →
    table 1, 2, 3; 'Fig. 5(a)' → fig 5 a; 'Thm 1/4' → thm 1 and 4; 'Thm 4.3' → thm 43."""
    refs: set[tuple[str, str, str]] = set()
    for m in _TEXT_REF.finditer(text):
        kind = _REF_KINDS[m.group(1).lower().rstrip(".")]
        items = re.split(r"\s*(,|/|&|and|–|-)\s*", m.group(2))
        numbers, seps = items[0::2], items[1::2]
        for i, tok in enumerate(numbers):
            num, letter = _norm_number(tok)
            refs.add((kind, num, letter))
            if i and seps[i - 1] in ("–", "-") and not letter:
                prev, _ = _norm_number(numbers[i - 1])
                if prev.isdigit() and num.isdigit() and int(prev) < int(num) <= int(prev) + 20:
                    refs |= {(kind, str(k), "") for k in range(int(prev), int(num) + 1)}
    return refs


def file_refs(stem: str) -> set[tuple[str, str, str]]:
    """The figures, tables, theorems and lemmas a figure file is named after: 'fig4_table3_label_skew' → fig 4 and
    table 3; 'tables5_10_11_12_ablation' → tables 5, 10, 11, 12; 'thm43_gram_spectra' → thm 43. Names in capitals
    ('F5_...') or 't2_...' number the notebook's own checks, not the paper's, and name nothing."""
    refs: set[tuple[str, str, str]] = set()
    for m in _FILE_REF.finditer(stem):
        kind = _REF_KINDS[m.group(1) if m.group(1) != "tables" else "table"]
        for tok in m.group(2).split("_"):
            refs.add((kind, *_norm_number(tok)))
    return refs


def refs_match(a: set[tuple[str, str, str]], b: set[tuple[str, str, str]]) -> bool:
    """True when two reference sets share an item: same kind and number, and the same letter or one without."""
    return any(ka == kb and na == nb and (la == lb or not la or not lb) for ka, na, la in a for kb, nb, lb in b)


# -------------------------------------------------------------------------------------------- generated Markdown


def verdict_badge(label: str, category: str) -> str:
    """The verdict as shown (``label``) in a span coloured by its category."""
    cls = VERDICT_CLASS.get(category, "unknown")
    return f'<span class="pflnb-verdict pflnb-v-{cls}">{html.escape(label)}</span>'


_INTERVAL = re.compile(r"\[[+\-−]?\d[\d.,]*\s*,\s*[+\-−]?\d[\d.,]*\]")


def ours_html(text: str) -> str:
    """Our number as HTML, every interval '[lo, hi]' marked so that it stands out."""
    out, last = [], 0
    for m in _INTERVAL.finditer(text):
        out += [html.escape(text[last : m.start()]), f'<span class="pflnb-ci">{html.escape(m.group(0))}</span>']
        last = m.end()
    return "".join(out) + html.escape(text[last:])


def code_version_text(code: str) -> str:
    """The code version a claims CSV records, or what to do when it records none."""
    return code if code else "not recorded (the CSV predates the code column; `make reproduce-all` writes it)"


def effect_html(effect: str, where: str) -> str:
    """The paper's effect and where it lies against our interval ('—' when the paper states no numbers)."""
    if not effect:
        return "—"
    return f'{html.escape(effect)}<br/><small class="pflnb-effect">{html.escape(where) if where else "no interval"}</small>'


def claims_html(table: pd.DataFrame, paper: str, ours: bool = False) -> str:
    """One paper's claims as an HTML table: number, claim, paper value (with where the paper states it), ours
    (intervals marked), the paper's effect against our interval, seeds, verdict. ``ours``: our own checks instead
    (with why each is ours, no paper effect). Rows keep their number in the claims CSV (from 1): row ``i`` has the
    anchor ``claim-<paper>-<i>``."""
    rows = []
    for i, r in zip(table.index, table.itertuples(index=False)):
        n = i + 1
        seeds = html.escape(r.seeds) if r.seeds else "—"
        cite = f'<br/><small class="pflnb-cite">{html.escape(r.cite)}</small>' if r.cite and not ours else ""
        effect = effect_html(r.paper_effect, r.effect_vs_ours)
        middle = (
            f"<td>{html.escape(r.cite)}</td><td>{ours_html(r.ours)}</td>"
            if ours
            else f"<td>{html.escape(r.paper)}{cite}</td><td>{ours_html(r.ours)}</td><td>{effect}</td>"
        )
        rows.append(
            f'<tr id="claim-{paper}-{n}" class="pflnb-row-{VERDICT_CLASS.get(r.category, "unknown")}">'
            f'<td class="pflnb-num">{n}</td><td>{html.escape(r.claim)}</td>{middle}<td class="pflnb-seeds">{seeds}</td>'
            f"<td>{verdict_badge(r.verdict, r.category)}</td></tr>"
        )
    head = (
        "<tr><th>#</th><th>our check</th><th>why it is ours</th><th>ours (90 % interval)</th><th>seeds</th><th>verdict</th></tr>"
        if ours
        else "<tr><th>#</th><th>claim</th><th>paper (where it says so)</th><th>ours (90 % interval)</th>"
        "<th>paper's effect vs our interval</th><th>seeds</th><th>verdict</th></tr>"
    )
    cls = "pflnb-claims pflnb-ours" if ours else "pflnb-claims"
    return f'<table class="{cls}"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _split(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the paper's claims, our checks) of a claims table, each keeping its row numbers."""
    return table[table.source != C.OURS_SOURCE], table[table.source == C.OURS_SOURCE]


def counts_html(table: pd.DataFrame, link: bool = True) -> str:
    """The count of the papers' claims per paper and verdict as an HTML table with a total row (paper names linked to
    their pages when ``link``), then stand-ins, fragile verdicts (once ``make robustness`` ran) and our checks."""
    counts = C.ledger_counts(table)
    keys = {v: k for k, v in C.PAPERS.items()}
    extra = [c for c in (C.STAND_IN, C.FRAGILE, C.OUR_CHECKS) if c in counts.columns]
    head = "".join(f"<th>{verdict_badge(c, c)}</th>" for c in C.COUNTED) + "<th>total</th>"
    head += "".join(f"<th>{html.escape(c)}</th>" for c in extra)
    cell = lambda n: f'<td class="pflnb-num{" pflnb-zero" if not n else ""}">{n}</td>'  # noqa: E731
    rows = []
    for _, r in counts.iterrows():
        name = html.escape(r["paper"])
        if link and r["paper"] in keys:
            name = f'<a href="papers/{keys[r["paper"]]}.html">{name}</a>'
        cells = "".join(cell(int(r[c])) for c in C.COUNTED) + f'<td class="pflnb-num"><b>{int(r["total"])}</b></td>'
        rows.append(f"<tr><td>{name}</td>{cells}{''.join(cell(_count(r[c])) for c in extra)}</tr>")
    total = (
        "".join(cell(int(counts[c].sum())) for c in C.COUNTED) + f'<td class="pflnb-num"><b>{int(counts["total"].sum())}</b></td>'
    )
    total += "".join(cell(sum(v for v in counts[c] if not isinstance(v, str))) for c in extra)  # over the papers checked
    rows.append(f'<tr class="pflnb-total"><td>all papers</td>{total}</tr>')
    return f'<table class="pflnb-counts"><thead><tr><th>paper</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _read(figures: Path, paper: str) -> tuple[pd.DataFrame, str] | None:
    path = figures / paper / "claims.csv"
    return C.read_claims(path) if path.exists() else None


@dataclass(frozen=True)
class FigureClaims:
    """A figure file and the numbers (from 1) of the claims whose text names the figure, table or theorem it shows."""

    path: Path
    claims: tuple[int, ...]


def figures_for_claims(table: pd.DataFrame, figure_paths: Iterable[Path]) -> list[FigureClaims]:
    """Each figure with the claims it supports, figures supporting claims first (in the order of their first claim),
    then the others (theory checks, extra analyses) by name."""
    texts = [text_refs(f"{r.claim} {r.paper}") for r in table.itertuples(index=False)]
    out = []
    for path in sorted(figure_paths):
        refs = file_refs(path.stem)
        out.append(FigureClaims(path, tuple(i for i, t in enumerate(texts, start=1) if refs and refs_match(refs, t))))
    return sorted(out, key=lambda f: (not f.claims, f.claims[:1] or (0,), f.path.name))


def _figure_title(stem: str) -> str:
    return stem.replace("_", " ")


def coverage_markdown(path: Path) -> list[str]:
    """The section of a paper's page that lists every numbered item of the paper, its status and the ledger rows
    that test it (``figures/<paper>/coverage.csv``, written by the notebook); nothing when the file is missing."""
    if not path.exists():
        return []
    table = pd.read_csv(path, keep_default_na=False)
    head = "".join(f"<th>{c}</th>" for c in ("item", "shows", "status", "ledger rows", "why not / what is missing"))
    rows = [
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (r.item, r.shows, r.status, r.ledger, r.reason)) + "</tr>"
        for r in table.itertuples(index=False)
    ]
    counts = table.status.value_counts()
    tally = ", ".join(f"{int(counts[s])} {s}" for s in ("covered", "partly", "missing", "not testable") if s in counts)
    return [
        "## Coverage of the paper",
        "",
        f"Every numbered table, figure and theorem of the paper ({tally}), the ledger rows above that test it, or why "
        f"it is not tested here; declared in the paper's `paper.py`, written to `figures/{path.parent.name}/coverage.csv`.",
        "",
        f'<table class="pflnb-coverage"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>',
        "",
    ]


def tuning_edges_markdown(path: Path) -> list[str]:
    """The section of a paper's page that counts its tuned arms still at an edge of their grid after the grid-edge
    rule (``figures/<paper>/tuning_edges.csv``, written by the notebook) and lists them; nothing when the file is
    missing or empty."""
    if not path.exists():
        return []
    table = pd.read_csv(path, keep_default_na=False)
    if table.empty:
        return []
    stuck = table[table["at edge after the rule"].astype(str) == "True"]
    before = int((table["at edge on the grid"].astype(str) == "True").sum())
    dead = table[table.get("no value trained", pd.Series("", index=table.index)).astype(str) == "True"]
    lines = [
        "## Tuning: arms at an edge of their grid",
        "",
        f"Of the {len(table)} tuned cells (arm × setting) of this paper's experiments, {before} chose a value at an edge "
        f"of the declared grid, and **{len(stuck)}** still sit at an edge after the grid-edge rule's {EDGE_STEPS} steps: "
        "those arms were not tuned to an interior value, and their comparisons carry it "
        f"([verdict rule](/guides/verdict-rule), `figures/{path.parent.name}/tuning_edges.csv`)"
        + (f"; in **{len(dead)}** no value trained on every tuning seed (each diverged or collapsed)." if len(dead) else "."),
        "",
    ]
    captions = (
        "Still at an edge after the rule (not tuned to an interior value):",
        "No value trained (untuned: every comparison with them is not testable):",
    )
    for caption, group in zip(captions, (stuck, dead)):
        if len(group):
            lines += [caption, ""]
            head = "".join(f"<th>{c}</th>" for c in ("experiment", "cell", "chosen"))
            rows = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (r.experiment, r.cell, r.chosen)) + "</tr>"
                for r in group.itertuples(index=False)
            )
            lines += [f'<table class="pflnb-coverage"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>', ""]
    return lines


def paper_claims_markdown(paper: str, figures: Path, notebook: str | None = None, figure_url: str = "/figures") -> str:
    """The generated part of a paper's page: verdict counts, the claims table (verdicts coloured, intervals, seeds,
    the code version the CSV records) and every figure of ``figures/<paper>/`` with the claims it supports."""
    found = _read(figures, paper)
    name = C.PAPERS[paper]
    if found is None:
        return f"```{{note}}\nNo `figures/{paper}/claims.csv` yet: run the {name} notebook (`make reproduce-all`).\n```\n"
    table, code = found
    counts = C.ledger_counts(table.assign(paper=name)).iloc[0]
    tally = " · ".join(f"{verdict_badge(f'{int(counts[c])} {c}', c)}" for c in C.COUNTED if counts[c])
    claims, checks = _split(table)
    lines = [
        "## Claims and verdicts",
        "",
        f'<p class="pflnb-tally">{len(claims)} claims: {tally}</p>',
        "",
        f"Decided by the [verdict rule](/guides/verdict-rule) from `figures/{paper}/claims.csv`, the source of "
        f"`pflnb claims` and of the [ledger](/ledger). Each claim cites where the paper states it; the paper's effect "
        f"(A − B, as the paper reports it) is shown beside our interval. Code version recorded in the CSV: "
        + (f"`{code}`." if code else f"{code_version_text(code)}."),
        "",
        claims_html(claims, paper),
        "",
    ]
    if len(checks):
        lines += [
            "## Our checks (not counted)",
            "",
            "Checks the paper does not state (sanity checks of ours, expectations of our spec, implied readings): decided "
            "by the same rule, listed apart, never counted in the ledger's totals.",
            "",
            claims_html(checks, paper, ours=True),
            "",
        ]
    lines += coverage_markdown(figures / paper / "coverage.csv")
    lines += tuning_edges_markdown(figures / paper / "tuning_edges.csv")
    figs = figures_for_claims(table, (figures / paper).glob("*.png"))
    if figs:
        lines += ["## Figures and the claims they support", ""]
        lines += [
            f"Every figure the notebook saved in `figures/{paper}/`, beside the claims whose text names the figure, table "
            "or theorem it shows; figures no claim names (theory checks, extra analyses) come last.",
            "",
        ]
        for f in figs:
            lines += [f"### {_figure_title(f.path.stem)}", ""]
            if f.claims:
                items = []
                for i in f.claims:
                    r = table.iloc[i - 1]
                    items.append(
                        f'<li><a href="#claim-{paper}-{i}">claim {i}</a>: {html.escape(r.claim)} '
                        f"{verdict_badge(r.verdict, r.category)}<br/><small>{ours_html(r.ours)}</small></li>"
                    )
                lines += [f'<ul class="pflnb-supports">{"".join(items)}</ul>', ""]
            lines += [
                f"```{{image}} {figure_url}/{paper}/{f.path.name}",
                f":alt: {paper} {f.path.stem}",
                ":class: pflnb-figure",
                "```",
                "",
            ]
    if notebook:
        lines += [
            "## The notebook",
            "",
            f"The whole reproduction, theory checks and experiments, is the executed notebook "
            f"[{notebook}](/notebooks/{notebook}), the next page.",
            "",
        ]
    return "\n".join(lines)


def ledger_markdown(figures: Path) -> str:
    """The generated ledger page body: counts per paper and verdict, then every paper's claims with its code version."""
    table = C.ledger(figures)
    lines = [counts_html(table), ""]
    old = C.old_rule_papers(figures)
    if old:
        lines += [
            "```{warning}",
            f"The claims of {', '.join(old)} were decided before the current verdict rules (no floor for arms that did "
            "not train, no citations, our own checks counted among the papers' claims, no paper effect beside ours). "
            "Their rows and counts are those of the earlier rule until `make reproduce-all` regenerates them.",
            "```",
            "",
        ]
    for key, name in C.PAPERS.items():
        found = _read(figures, key)
        if found is None:
            continue
        t, code = found
        claims, checks = _split(t)
        lines += [
            f"## {name}",
            "",
            f"[{name}: claims, figures and notebook](/papers/{key}) · `figures/{key}/claims.csv` · code version: "
            + (f"`{code}`" if code else code_version_text(code)),
            "",
            claims_html(claims, key),
            "",
        ]
        if len(checks):
            lines += [f"### {name}: our checks (not counted)", "", claims_html(checks, key, ours=True), ""]
    lines += robustness_markdown(figures)
    lines += moves_markdown(figures)
    return "\n".join(lines)


def _count(value: Any) -> int | str:
    """A count of the ledger's table, or its text where there is none (a fragile count 'not checked')."""
    return value if isinstance(value, str) else int(value)


def robustness_markdown(figures: Path) -> list[str]:
    """The ledger page's section on fragile verdicts (``figures/robustness.csv`` of ``make robustness``)."""
    path = figures / "robustness.csv"
    if not path.exists():
        return [
            "## Fragile verdicts",
            "",
            "Not checked yet: `make robustness` (the main scope's verdict seeds again under perturbed CPU kernels) has not "
            "been run on these outputs, so no verdict is marked fragile. That means unchecked, not robust.",
            "",
        ]
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    try:
        t = C.robustness_now(table, C.ledger(figures))
    except FileNotFoundError:  # no claims at all: nothing the table checked is decided now
        t = table.iloc[0:0]
    stale = len(table) - len(t)
    fragile = t[t.fragile == C.FRAGILE]
    checked = [C.PAPERS.get(p, p) for p in dict.fromkeys(t.paper)]
    unchecked = [name for key, name in C.PAPERS.items() if key not in set(t.paper)]
    scope = f"Papers checked: {', '.join(checked)}" + (
        f"; not yet {', '.join(unchecked)}, whose verdicts are unchecked, not robust." if unchecked else "."
    )
    head = "<tr><th>paper</th><th>claim</th><th>pinned kernels</th><th>perturbed kernels</th></tr>"
    rows = "".join(
        f"<tr><td>{html.escape(C.PAPERS.get(r.paper, r.paper))}</td><td>{html.escape(r.claim)}</td>"
        f"<td>{verdict_badge(r.pinned, r.pinned)}<br/><small>{ours_html(r._5)}</small></td>"
        f"<td>{verdict_badge(r.perturbed, r.perturbed)}<br/><small>{ours_html(r._6)}</small></td></tr>"
        for r in fragile.itertuples(index=False)
    )
    return [
        "## Fragile verdicts",
        "",
        f"`make robustness` reran the main scope's verdict seeds with torch's generic CPU kernels in place of the pinned "
        f"AVX2 ones (a change in the last bits of the arithmetic; the tuning kept). {len(fragile)} of the {len(t)} verdicts "
        f"it checked changed: they sit on a boundary, and the ledger marks them '(fragile)'. {scope}"
        + (
            f" {stale} more rows of the table checked an earlier decision of their claims (the claim, its rule or its "
            "runs changed since the table was made): those claims read not checked until `make robustness` runs again."
            if stale
            else ""
        ),
        "",
        f'<table class="pflnb-claims pflnb-fragile"><thead>{head}</thead><tbody>{rows}</tbody></table>' if len(fragile) else "",
        "",
    ]


def moves_markdown(figures: Path) -> list[str]:
    """The ledger page's 'How the ledger moved' table (``figures/ledger_moves.csv``): every verdict that changed in the
    last regeneration, old → new, and why."""
    path = figures / C.MOVES_FILE
    if not path.exists():
        return []
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    head = "<tr><th>paper</th><th>claim</th><th>before</th><th>now</th><th>why</th></tr>"
    rows = "".join(
        f"<tr><td>{html.escape(C.PAPERS.get(r.paper, r.paper))}</td><td>{html.escape(r.claim)}</td>"
        f"<td>{html.escape(r.before)}</td><td>{html.escape(r.now)}</td><td>{html.escape(r.why)}</td></tr>"
        for r in t.itertuples(index=False)
    )
    return [
        "## How the ledger moved",
        "",
        f"Every verdict that changed when the outputs were last regenerated ({len(t)} rows, `figures/{C.MOVES_FILE}`), "
        "old → new, and what changed it.",
        "",
        f'<table class="pflnb-claims pflnb-moves"><thead>{head}</thead><tbody>{rows}</tbody></table>',
        "",
    ]


def counts_markdown(figures: Path) -> str:
    """The five-row count table (for the home page)."""
    return counts_html(C.ledger(figures)) + "\n"


def methods_markdown() -> str:
    """Every registered method: name, what it is, its hyperparameters' defaults (the registry, as ``pflnb list``)."""
    rows = []
    for m in describe_methods():
        params = ", ".join(f"{k}={v!r}" for k, v in m["params"].items()) or "—"
        rows.append(
            f"<tr><td><code>{html.escape(m['method'])}</code></td><td>{html.escape(m['description'])}</td>"
            f'<td class="pflnb-params"><code>{html.escape(params)}</code></td></tr>'
        )
    return (
        '<table class="pflnb-methods"><thead><tr><th>name</th><th>method</th><th>hyperparameters (defaults)</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>\n"
    )


def build_markdown(profile: str, executed: Path, figures: Path, root: Path | None = None) -> str:
    """What this build was made from: the notebooks' profile and folder, the claims' folder."""
    root = ROOT if root is None else root
    note = PROFILE_NOTES.get(profile, "")
    rel = lambda p: os.path.relpath(p, root) if Path(p).resolve().is_relative_to(root.resolve()) else str(p)  # noqa: E731
    return (
        f"These pages show the notebooks executed at the **{profile}** profile (`{rel(executed)}/`"
        + (f"; {note}" if note else "")
        + f"). Claims and figures on the paper pages and the ledger come from `{rel(figures)}/`.\n"
    )


# --------------------------------------------------------------------------------------------------- stage, build


def executed_complete(folder: Path, root: Path | None = None) -> list[str]:
    """The notebooks of ``notebooks/`` that ``folder`` has no executed copy of (empty: complete)."""
    root = ROOT if root is None else root
    return [p.name for p in notebook_sources(root) if not (folder / p.name).exists()]


def executed_stale(folder: Path, root: Path | None = None) -> list[str]:
    """The notebooks whose executed copy in ``folder`` is older than the notebook itself."""
    root = ROOT if root is None else root
    return [
        p.name
        for p in notebook_sources(root)
        if (folder / p.name).exists() and (folder / p.name).stat().st_mtime < p.stat().st_mtime
    ]


def mathjax_dir() -> Path | None:
    """MathJax 2's files, shipped by the ``jupyter-server-mathjax`` package (None when it is not installed)."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    path = Path(jupyter_server_mathjax.__file__).parent / "static"
    return path if (path / "MathJax.js").exists() else None


def stage(
    out: Path, executed: Path, profile: str, figures: Path | None = None, docs: Path | None = None, root: Path | None = None
) -> Path:
    """Assemble the site's sources in ``out`` (emptied first): ``docs/``, the cleaned executed notebooks with their
    banners, the generated pages and the figures; return ``out``."""
    root = ROOT if root is None else root
    docs = docs or root / "docs"
    figures = figures or C.figures_root()
    missing = executed_complete(executed, root)
    if missing:
        raise FileNotFoundError(f"{executed} has no executed {', '.join(missing)}; run `pflnb reproduce --profile {profile}`")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(docs, out, ignore=shutil.ignore_patterns("_build", "__pycache__", GENERATED))
    papers = {v: k for k, v in paper_notebooks(root).items()}
    (out / "notebooks").mkdir(exist_ok=True)
    for src in notebook_sources(root):
        nb = clean_notebook(json.loads((executed / src.name).read_text()), root)
        nb = add_banner(nb, notebook_banner(profile, src.stem, papers.get(src.stem)))
        (out / "notebooks" / src.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False))
    gen = out / GENERATED
    gen.mkdir()
    for key, stem in paper_notebooks(root).items():
        (gen / f"{key}.md").write_text(paper_claims_markdown(key, figures, notebook=stem))
    (gen / "ledger.md").write_text(ledger_markdown(figures))
    (gen / "counts.md").write_text(counts_markdown(figures))
    (gen / "methods.md").write_text(methods_markdown())
    (gen / "build.md").write_text(build_markdown(profile, executed, figures, root))
    for png in sorted(figures.glob("*/*.png")):
        dest = out / "figures" / png.parent.name / png.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, dest)
    mj = mathjax_dir()
    if mj is None:  # without it the pages would fetch MathJax from the network
        raise FileNotFoundError("the site serves its own MathJax: install jupyter-server-mathjax (pinned; `make env`)")
    shutil.copytree(mj, out / "_static" / "mathjax", ignore=shutil.ignore_patterns("localization"))
    return out


def execute(profile: str, root: Path | None = None) -> Path:
    """Execute every notebook at ``profile`` with ``pflnb reproduce`` (a subprocess) into ``executed/<profile>/``."""
    root = ROOT if root is None else root
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, "-m", "pflnb.cli", "reproduce", "--profile", profile, "--quiet"]
    subprocess.run(cmd, check=True, env=env, cwd=root)
    return root / "executed" / profile


def newest_reproduction(profile: str, root: Path | None = None) -> Path:
    """Of ``executed/<profile>/`` (``make reproduce-all``) and ``executed/<profile>-main/`` (``make reproduce``, the main
    scope), the complete one whose notebooks were executed last (the full one when neither is complete)."""
    root = ROOT if root is None else root
    full, main = root / "executed" / profile, root / "executed" / f"{profile}-main"
    complete = [f for f in (full, main) if not executed_complete(f, root)]
    newest = lambda f: max((f / p.name).stat().st_mtime for p in notebook_sources(root))  # noqa: E731
    return max(complete, key=newest) if complete else full


def choose_executed(profile: str, executed: Path | None = None, root: Path | None = None, run: bool = True) -> tuple[str, Path]:
    """The (profile, folder) of executed notebooks to publish: ``executed``, or the last complete reproduction of
    ``profile`` (:func:`newest_reproduction`: after ``make reproduce`` its main scope, after ``make reproduce-all`` the
    full one); otherwise ``executed/smoke/``, executed first (when ``run``) if a notebook is missing there or older
    than its source."""
    root = ROOT if root is None else root
    folder = Path(executed) if executed is not None else newest_reproduction(profile, root)
    missing = executed_complete(folder, root)
    if not missing:
        stale = executed_stale(folder, root)
        if stale:
            renew = "`make reproduce-all` renews them"
            print(f"[pflnb] note: {', '.join(stale)} in {folder} are older than their notebooks; {renew}")
        return profile, folder
    if executed is not None:
        raise FileNotFoundError(f"{folder} lacks executed notebooks: {', '.join(missing)}")
    smoke = root / "executed" / "smoke"
    if profile != "smoke":
        make = f"`make reproduce-all PROFILE={profile}` makes it"
        print(f"[pflnb] no complete executed/{profile}/ ({make}): using the smoke profile")
    if executed_complete(smoke, root) or executed_stale(smoke, root):
        if not run:
            raise FileNotFoundError(f"{smoke} is incomplete or stale, and executing the notebooks was not allowed")
        print("[pflnb] executing every notebook at the smoke profile into executed/smoke/ (a few minutes)", flush=True)
        execute("smoke", root)
    return "smoke", smoke


def build(
    out: Path | None = None,
    profile: str = "cpu",
    executed: Path | None = None,
    figures: Path | None = None,
    root: Path | None = None,
    quiet: bool = False,
) -> Path:
    """Build the site: choose the executed notebooks (:func:`choose_executed`), stage the sources into
    ``<out>/src`` and run sphinx-build into ``<out>/html``; return the path of ``index.html``."""
    root = ROOT if root is None else root
    out = Path(out) if out is not None else root / SITE_DIR
    profile, folder = choose_executed(profile, executed, root)
    if figures is None and (folder / "figures").is_dir():  # the main scope keeps its claims beside its notebooks
        figures = folder / "figures"
        print(f"[pflnb] the site shows {folder.name}/ with its own claims and figures ({figures})")
    src = stage(out / "src", folder, profile, figures=figures, root=root)
    html_dir = out / "html"
    if html_dir.exists():
        shutil.rmtree(html_dir)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-j", "1", "-w", str(out / "warnings.log"), str(src), str(html_dir)]
    if quiet:
        cmd.insert(3, "-q")
    subprocess.run(cmd, check=True, env=env, cwd=root)
    return html_dir / "index.html"
