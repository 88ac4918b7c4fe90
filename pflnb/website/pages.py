"""The site's generated Markdown: each paper's claims table with its figures beside the claims they support, the
ledger across the papers, the count table, coverage, tuning edges, robustness and the ledger's moves, the registry's
methods."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.algorithms import describe_methods
from pflnb.experiments import claims as C
from pflnb.experiments.paper import EDGE_STEPS
from pflnb.website.notebooks import (
    PROFILE_NOTES,
    ROOT,
    VERDICT_CLASS,
)

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
        f"it is not tested here; declared in the paper's `coverage.py`, written to `figures/{path.parent.name}/coverage.csv`.",
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
    lines += paper_setting_markdown(figures)
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


def paper_setting_markdown(figures: Path) -> list[str]:
    """The ledger page's section on the claims decided at their paper's own setting (``figures/<paper>/claims-paper.csv``,
    :func:`~pflnb.experiments.claims.paper_setting_claims`), paper by paper, with each stand-in's reasons; none when
    no claim was decided there."""
    table = C.paper_setting_claims(figures)
    if table.empty:
        return []
    lines = [
        "## At the papers' own settings",
        "",
        "Claims decided at the setting the paper states, or at its stated sizes with a stand-in that names what still "
        "differs, by the same rule as the rest; the counts above are the cpu profile's alone. Each paper's table below "
        "holds the same claims at the cpu profile.",
        "",
    ]
    for key, name in C.PAPERS.items():
        t = table[table.paper == name].drop(columns="paper").rename(columns={"paper value": "paper"}).reset_index(drop=True)
        if t.empty:
            continue
        claims, checks = _split(t)
        lines += [
            f"### {name} at its own setting",
            "",
            f"`figures/{key}/{C.PAPER_SETTING_FILE}`",
            "",
            claims_html(claims, f"{key}-paper"),
        ]
        lines += ["", claims_html(checks, f"{key}-paper", ours=True)] if len(checks) else []
        reasons = "".join(
            f"<li>{html.escape(r.claim)}: {html.escape(r.stand_in)}</li>" for r in t.itertuples(index=False) if r.stand_in
        )
        lines += ["", f'<p>Stand-ins:</p><ul class="pflnb-stand-ins">{reasons}</ul>'] if reasons else []
        lines += [""]
    return lines


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
