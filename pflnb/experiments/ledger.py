"""The ledger of all papers' claims: the committed claims CSVs read together, counted per paper, written into the
README and the site, the moves between two regenerations, and the claims decided at the papers' own settings.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pflnb.experiments.claims import (
    CODE,
    FRAGILE,
    OURS_SOURCE,
    PAPER_SOURCE,
    STAND_IN,
    figures_root,
    read_claims,
)
from pflnb.experiments.effects import SMALLER_THAN_PAPER
from pflnb.experiments.registry import PAPERS as REGISTRY
from pflnb.experiments.verdicts import (
    CONTRADICTED,
    DIVERGED,
    INCONCLUSIVE,
    NOT_RUN,
    NOT_TESTABLE,
    PARTIAL,
    REPRODUCED,
    checks_now,
)

# ---------------------------------------------------------------------------------------------------- the ledger

PAPERS = REGISTRY  # the one registry of papers (:mod:`pflnb.experiments.registry`): key → name
COUNTED = (REPRODUCED, PARTIAL, CONTRADICTED, INCONCLUSIVE, NOT_TESTABLE, DIVERGED)
SKIPPED = (NOT_RUN,)  # counted only where a (main-scope) ledger has them


LEDGER_COLUMNS = [
    "paper",
    "claim",
    "paper value",
    "ours",
    "verdict",
    "category",
    "seeds",
    "stand_in",
    "source",
    "cite",
    "paper_effect",
    "effect_vs_ours",
    "wall_clock",
    "fragile",
    CODE,
]


def ledger(root: str | Path | None = None) -> pd.DataFrame:
    """Every paper's claims in one table (paper, claim, paper value, ours, verdict, who states it, ...) from
    ``figures/<paper>/claims.csv``: the paper's claims and our own checks (``source``)."""
    root = Path(root) if root is not None else figures_root()
    frames = []
    for key, name in PAPERS.items():
        path = root / key / "claims.csv"
        if not path.exists():
            continue
        t, code = read_claims(path)
        frames.append(t.assign(paper_name=name, **{CODE: code}))
    if not frames:
        raise FileNotFoundError(f"no claims.csv under {root}/<paper>/; run the paper notebooks first")
    t = pd.concat(frames, ignore_index=True)
    return t.rename(columns={"paper": "paper value"}).rename(columns={"paper_name": "paper"})[LEDGER_COLUMNS]


RULE_COLUMNS = ("source", "cite", "paper_effect")  # written by every claims CSV decided under the rules of issue #32


def old_rule_papers(root: str | Path | None = None) -> list[str]:
    """The papers whose ``figures/<paper>/claims.csv`` was decided before the current verdict rules (it lacks
    :data:`RULE_COLUMNS`: no citations, our checks counted as the paper's, no floor for arms that did not train)."""
    root = Path(root) if root is not None else figures_root()
    paths = {name: root / key / "claims.csv" for key, name in PAPERS.items()}
    return [
        name for name, path in paths.items() if path.exists() and not set(RULE_COLUMNS) <= set(pd.read_csv(path, nrows=0).columns)
    ]


OUR_CHECKS = "our checks"  # the count column of claims the papers do not state (not in the totals)
NOT_CHECKED = "not checked"  # the fragile count of a paper that `make robustness` has not checked yet


SMALLER_COUNT = "below paper's effect"  # the count column of SMALLER_THAN_PAPER's claims


def ledger_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Count of the papers' claims per paper and verdict category (reproduced, partially, contradicted, inconclusive,
    ...) and their total; then how many of them are stand-ins, how many fragile, and how many inconclusive with the
    paper's effect above our interval (:data:`SMALLER_COUNT`; each counted in its verdict category as well), and the
    number of our own checks (not in the total)."""
    source = table["source"] if "source" in table.columns else pd.Series(PAPER_SOURCE, index=table.index)
    papers = [p for p in PAPERS.values() if p in set(table["paper"])]
    claims = table[source == PAPER_SOURCE]
    shown = [*COUNTED, *(c for c in SKIPPED if (claims["category"] == c).any())]
    counts = pd.crosstab(claims["paper"], claims["category"]).reindex(index=papers, columns=shown, fill_value=0)
    counts["total"] = counts.sum(axis=1)
    marked = claims.stand_in.astype(bool) if "stand_in" in claims.columns else pd.Series(False, index=claims.index)
    counts[STAND_IN] = marked.groupby(claims["paper"]).sum().reindex(counts.index, fill_value=0).astype(int)
    if "fragile" in claims.columns and (claims["fragile"] != "").any():
        fragile = claims["fragile"] == FRAGILE
        n = fragile.groupby(claims["paper"]).sum().reindex(counts.index, fill_value=0).astype(int)
        checked = (claims["fragile"] != "").groupby(claims["paper"]).any().reindex(counts.index, fill_value=False)
        counts[FRAGILE] = [int(k) if c else NOT_CHECKED for k, c in zip(n, checked)]  # unchecked is not 0 fragile
    labels = claims.get("verdict", pd.Series("", index=claims.index)).fillna("")
    below = (claims["category"] == INCONCLUSIVE) & labels.str.contains(SMALLER_THAN_PAPER, regex=False)
    counts[SMALLER_COUNT] = below.groupby(claims["paper"]).sum().reindex(counts.index, fill_value=0).astype(int)
    counts[OUR_CHECKS] = (source == OURS_SOURCE).groupby(table["paper"]).sum().reindex(counts.index, fill_value=0).astype(int)
    return counts.rename_axis(index="paper", columns=None).reset_index()


def markdown_table(table: pd.DataFrame) -> str:
    """``table`` as a Markdown table (cells with | escaped, newlines as spaces)."""
    cols = list(table.columns)
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def ledger_markdown(root: str | Path | None = None) -> str:
    """The ledger as Markdown: counts per paper, then every paper claim, then our own checks (``pflnb claims
    --markdown``)."""
    t = ledger(root)
    cols = ["paper", "claim", "paper value", "ours", "verdict", "paper_effect", "effect_vs_ours"]
    named = {"paper_effect": "paper's effect", "effect_vs_ours": "paper's effect vs our interval"}
    text = markdown_table(ledger_counts(t)) + "\n\n" + markdown_table(t[t.source == PAPER_SOURCE][cols].rename(columns=named))
    ours = t[t.source == OURS_SOURCE]
    if len(ours):
        text += "\n\nOur checks (not stated by the papers; not counted):\n\n"
        text += markdown_table(ours[["paper", "claim", "ours", "verdict", "cite"]].rename(columns={"cite": "why it is ours"}))
    marked = t[(t.stand_in != "") & (t.source == PAPER_SOURCE)]
    if len(marked):
        reasons = marked[["paper", "claim", "stand_in"]].rename(columns={"stand_in": "what the paper states, what we test"})
        text += "\n\nStand-ins: claims decided on another setting or by another criterion than the paper's.\n\n"
        text += markdown_table(reasons)
    return text


MOVES_FILE = "ledger_moves.csv"  # under figures/: how the ledger moved in the last regeneration
MOVES_COLUMNS = ["paper", "claim", "before", "now", "why"]
# Under figures/: claims restated between two ledgers (paper key, the claim's text now, its text before), written by
# hand, so that a restated claim is compared with its earlier self rather than listed as withdrawn and new
RENAMES_FILE = "ledger_renames.csv"
RENAMES_COLUMNS = ["paper", "claim", "formerly"]


def _why(old: pd.Series | None, new: pd.Series | None) -> str:
    """A first reading of what moved a verdict, from the rows themselves (the committed table is checked by hand)."""
    if new is None:
        return "claim withdrawn"
    if old is None:
        return "new claim"
    text = f"{new.ours} {new.verdict}"
    if new.source == OURS_SOURCE and old.get("source", PAPER_SOURCE) != OURS_SOURCE:
        return "not stated by the paper: moved to our checks (#32 item 5)"
    for needle, why in (
        ("did not train", "an arm below the floor: not testable (#32 item 1)"),
        ("claimed size δ", "the paper's stated size used as the margin (#32 item 2)"),
        ("not after Holm", "parts as a conjunction, Holm's correction (#32 item 3)"),
        ("chosen on validation", "strongest competitor chosen on validation (#32 item 4)"),
        ("against every competitor", "strongest competitor: against every competitor (#32 item 4)"),
        ("claimed):", "'in most cases' decided as at least k of n (#32 item 6)"),
        ("TOST", "equivalence by two one-sided tests (#32 item 8)"),
    ):
        if needle in text:
            return why
    if new.wall_clock == "yes":
        return "paired timing job (#32 item 9)"
    return "new numbers: pinned CPU kernels (#31), grid-edge tuning (#32 item 1)"


def ledger_moves(
    old: pd.DataFrame, new: pd.DataFrame, previous: pd.DataFrame | None = None, renames: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every claim whose verdict category or source changed between two ledgers (:func:`ledger` tables), and claims
    that appeared or went: paper key, claim, before, now, why. ``renames`` (:data:`RENAMES_COLUMNS`) pairs a claim's
    text now with its text in ``old``, so that a restated claim is compared with itself. ``why`` is kept from
    ``previous`` (a committed moves table, checked by hand) for the same move, else a first reading (:func:`_why`)."""
    keys = {name: key for key, name in PAPERS.items()}
    if renames is not None and len(renames):
        now_of = {(PAPERS.get(r.paper, r.paper), r.formerly): r.claim for r in renames.itertuples(index=False)}
        old = old.assign(claim=[now_of.get((p, c), c) for p, c in zip(old.paper, old.claim)])
    kept = {}
    if previous is not None:
        kept = {(r.paper, r.claim, r.before, r.now): r.why for r in previous.itertuples(index=False)}
    shown = lambda r: "—" if r is None else (f"{r.category} (our check)" if r.source == OURS_SOURCE else r.category)  # noqa: E731
    rows = []
    for paper in [p for p in PAPERS.values() if p in set(old.paper) | set(new.paper)]:
        a = {r.claim: r for _, r in old[old.paper == paper].iterrows()}
        b = {r.claim: r for _, r in new[new.paper == paper].iterrows()}
        for claim in [*b, *(c for c in a if c not in b)]:
            before, now = a.get(claim), b.get(claim)
            if before is not None and now is not None and shown(before) == shown(now):
                continue
            row = [keys[paper], claim, shown(before), shown(now)]
            rows.append([*row, kept.get(tuple(row), _why(before, now))])
    return pd.DataFrame(rows, columns=MOVES_COLUMNS)


LEDGER_START, LEDGER_END = "<!-- claims-ledger:start -->", "<!-- claims-ledger:end -->"
# Where the README points for every claim: the site's ledger page (its source, and the page `make site` builds)
SITE_LEDGER = "docs/ledger.md"
SITE_LEDGER_HTML = "_site/html/ledger.html"


PAPER_SETTING_FILE = "claims-paper.csv"  # under figures/<paper>/: claims decided at the paper's own setting


def paper_setting_claims(root: str | Path | None = None) -> pd.DataFrame:
    """The claims decided at their paper's own setting, or at its stated sizes with a stand-in that names what still
    differs (``figures/<paper>/claims-paper.csv``, e.g. :mod:`pflnb.papers.fedpg.paper_setting`), with a ``paper``
    column naming the paper; empty when there are none."""
    root = Path(root) if root is not None else figures_root()
    frames = []
    for key, name in PAPERS.items():
        path = root / key / PAPER_SETTING_FILE
        if path.exists():
            frames.append(read_claims(path)[0].rename(columns={"paper": "paper value"}).assign(paper=name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["paper", "claim", "verdict"])


def paper_setting_text(table: pd.DataFrame) -> str:
    """One README sentence on the papers' claims decided at their paper's own setting: per paper, how many of each
    verdict, and how many of them are stand-ins (every claim, and our checks, on the site's ledger page); '' when
    there are none."""
    table = table[table.source == PAPER_SOURCE] if "source" in table else table
    if table.empty:
        return ""
    items = []
    for paper, rows in table.groupby("paper", sort=False):
        counts = rows.category.value_counts()
        stand_ins = int((rows.stand_in != "").sum())
        shown = ", ".join(f"{counts[c]} {c}" for c in (*COUNTED, *SKIPPED) if c in counts)
        items.append(f"{paper} {shown}" + (f" ({stand_ins} stand-in{'s' * (stand_ins > 1)})" if stand_ins else ""))
    return (
        f"\n\nAt the paper's own setting or sizes ({len(table)} claim{'s' * (len(table) > 1)}, "
        f"`figures/<paper>/{PAPER_SETTING_FILE}`, each on "
        f"the [claims ledger]({SITE_LEDGER})): {'; '.join(items)}."
    )


def readme_ledger_markdown(root: str | Path | None = None) -> str:
    """The README's results overview: the count of claims per paper and verdict, and where every claim is (the
    site's ledger page, ``pflnb claims``), then the claims decided at their paper's own setting. Deterministic: no
    dates, no commit ids (``pflnb check-outputs`` compares it before and after a reproduction)."""
    return readme_ledger_text(ledger(root)) + paper_setting_text(paper_setting_claims(root))


def readme_ledger_text(table: pd.DataFrame) -> str:
    """:func:`readme_ledger_markdown` of a ledger ``table`` (:func:`ledger`'s columns)."""
    counts = markdown_table(ledger_counts(table))
    return (
        f"{counts}\n\n"
        f"The counts are the papers' own claims (each cites where the paper states it); '{OUR_CHECKS}', our own "
        f"sanity checks, are not counted. Every claim, with the paper's value and effect, ours with its "
        f"90 % interval, the seeds and the verdict: the site's "
        f"[claims ledger]({SITE_LEDGER}) (`make site`, then open `{SITE_LEDGER_HTML}`), or `pflnb claims`."
    )


def readme_with_ledger(readme: str, root: str | Path | None = None) -> str:
    """``readme`` with the text between the ledger markers replaced by :func:`readme_ledger_markdown`."""
    if LEDGER_START not in readme or LEDGER_END not in readme:
        raise ValueError(f"the README has no ledger markers {LEDGER_START} ... {LEDGER_END}")
    head, rest = readme.split(LEDGER_START, 1)
    _, tail = rest.split(LEDGER_END, 1)
    return f"{head}{LEDGER_START}\n{readme_ledger_markdown(root)}\n{LEDGER_END}{tail}"


def robustness_now(table: pd.DataFrame, ledger_table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the robustness table (``figures/robustness.csv``) that still describe a claim of ``ledger_table``
    (:func:`ledger`) as it is decided now (:func:`checks_now`); the others checked an earlier decision."""
    keys = {name: key for key, name in PAPERS.items()}
    now = {(keys.get(r["paper"], r["paper"]), r["claim"]): r for _, r in ledger_table.iterrows()}
    keep = [
        (r["paper"], r["claim"]) in now
        and checks_now(
            r["pinned"],
            r["pinned verdict"],
            now[(r["paper"], r["claim"])]["category"],
            now[(r["paper"], r["claim"])]["ours"],
            now[(r["paper"], r["claim"])]["wall_clock"] == "yes",
        )
        for _, r in table.iterrows()
    ]
    return table[pd.Series(keep, index=table.index, dtype=bool)]
