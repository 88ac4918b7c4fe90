"""A decided claim (:class:`Claim`: the claim, the paper's value, the outcome of the rule, its provenance) and the
claims CSV each notebook writes and the ledger reads.

The rule that decides claims is :mod:`pflnb.experiments.verdicts`; the ledger of all papers' claims is
:mod:`pflnb.experiments.ledger`. This module also gathers their public names, so that a paper's rules read
``R.compare``, ``R.REPRODUCED``, ... from one place (``from pflnb.experiments import claims as R``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from pflnb import __version__, kernels
from pflnb.experiments.effects import (  # noqa: F401  (read as R.<name>)
    SMALLER_THAN_PAPER,
    effect_position,
    effect_text,
    smaller_than_paper,
)
from pflnb.experiments.statistics import (  # noqa: F401  (the statistics' names, read as R.<name>)
    ALPHA,
    LEVEL,
    Interval,
    Values,
    holm,
    paired_differences,
    t_interval,
)
from pflnb.experiments.verdicts import (  # noqa: F401  (the rule's names, read as R.<name>)
    CONFOUNDED,
    CONTRADICTED,
    DIVERGED,
    EXTENDED_PARTS,
    FLOOR_MARGIN,
    HOLM_DEMOTED,
    INCONCLUSIVE,
    NOT_RUN,
    NOT_TESTABLE,
    PARTIAL,
    PARTS_TABLE,
    REPRODUCED,
    VERDICTS,
    WORD_SIZES,
    Floor,
    Outcome,
    Untuned,
    best,
    check,
    checks_now,
    compare,
    confounded,
    consistency,
    did_not_train,
    equivalent,
    floor,
    identity,
    marked,
    most,
    not_run,
    not_testable,
    parts,
    ratio_text,
    residual_text,
    trained,
    value,
    word_size,
)

STAND_IN = "stand-in"  # the word the shown verdict of a stand-in claim carries
FRAGILE = "fragile"  # ... of a claim whose verdict changed under a last-bit perturbation of the kernels (robustness.csv)
PAPER_SOURCE, OURS_SOURCE = "paper", "ours"  # who states a claim: the paper (counted in the ledger) or we (our checks)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, the paper's value, and the outcome of the verdict rule on our numbers.

    ``stand_in``: where the claim is decided on another dataset, model or scale than the paper states, or by a
    criterion other than the paper's own statement, the reasons. The shown verdict then says '(stand-in)'; the
    category, and so the counts, stay the verdict's.
    ``source``: ``paper`` when the paper states the claim (``cite``: where, and a quote of the paper's text), ``ours``
    for our own check (``cite``: why it is not the paper's); only the paper's claims are counted in the ledger.
    ``paper_effect`` / ``effect_vs_ours``: the paper's own effect (A − B) and where it lies against our interval
    (inside, above, below). ``wall_clock``: decided from wall-clock times (``check-outputs`` lists, does not count, its
    changes). ``fragile``: 'fragile' when the verdict changed under a last-bit perturbation (``make robustness``),
    'stable' when it did not, '' when not checked. ``reads``: the experiments whose runs the verdict read (``pflnb
    verify --claim`` recomputes their records).
    """

    claim: str
    paper: str
    outcome: Outcome
    note: str = ""
    seeds: Sequence[int] | None = field(default=None)
    stand_in: str = ""
    source: str = PAPER_SOURCE
    cite: str = ""
    paper_effect: str = ""
    effect_vs_ours: str = ""
    wall_clock: bool = False
    fragile: str = ""
    reads: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.reads, str):
            raise TypeError(f"reads must be a sequence of experiment names, not the string {self.reads!r}")
        if not isinstance(self.stand_in, str) or self.stand_in != self.stand_in.strip():
            raise ValueError(f"stand_in must be the reason as a trimmed string ('' for none), got {self.stand_in!r}")
        if self.source not in (PAPER_SOURCE, OURS_SOURCE):
            raise ValueError(f"source must be {PAPER_SOURCE!r} or {OURS_SOURCE!r}, got {self.source!r}")
        if self.fragile not in ("", FRAGILE, "stable"):
            raise ValueError(f"fragile must be '', {FRAGILE!r} or 'stable', got {self.fragile!r}")

    @property
    def verdict(self) -> str:
        """The verdict category (one of :data:`VERDICTS`)."""
        return self.outcome.verdict

    @property
    def smaller_than_paper(self) -> bool:
        """Whether an inconclusive claim's interval rules out the paper's own effect, lying between zero and it (in
        every part with an effect): the direction not shown, and the paper's size excluded (:data:`SMALLER_THAN_PAPER`)."""
        return smaller_than_paper(self.outcome, self.paper_effect)

    @property
    def label(self) -> str:
        """The verdict as shown, '(stand-in)' added for a stand-in claim, '(fragile)' for a fragile one and the words
        of :data:`SMALLER_THAN_PAPER` for an inconclusive claim whose interval lies below the paper's effect."""
        return self.outcome.shown(
            SMALLER_THAN_PAPER if self.smaller_than_paper else "",
            STAND_IN if self.stand_in else "",
            FRAGILE if self.fragile == FRAGILE else "",
        )

    def row(self) -> dict[str, str]:
        """The claim as one table row."""
        return {
            "claim": self.claim,
            "paper": self.paper,
            "ours": self.outcome.ours,
            "verdict": self.label,
            "category": self.outcome.verdict,
            "seeds": "" if self.seeds is None else " ".join(str(s) for s in self.seeds),
            "note": self.note,
            "stand_in": self.stand_in,
            "source": self.source,
            "cite": self.cite,
            "paper_effect": self.paper_effect,
            "effect_vs_ours": self.effect_vs_ours,
            "wall_clock": "yes" if self.wall_clock else "",
            "fragile": self.fragile,
            "reads": " ".join(self.reads),
        }


COLUMNS = [
    "claim",
    "paper",
    "ours",
    "verdict",
    "category",
    "seeds",
    "note",
    "stand_in",
    "source",
    "cite",
    "paper_effect",
    "effect_vs_ours",
    "wall_clock",
    "fragile",
    "reads",
]
# columns a CSV written by older code may lack, and the value they read as
OPTIONAL = {
    "stand_in": "",
    "source": PAPER_SOURCE,
    "cite": "",
    "paper_effect": "",
    "effect_vs_ours": "",
    "wall_clock": "",
    "fragile": "",
    "reads": "",
}
CODE = "code"  # the CSV's last column: the code version the claims came from (:func:`code_version`)
KERNELS = "kernels"  # ... and before it, the CPU kernels its notebook ran under (:func:`kernels_version`)
# Paths whose changes do not make the code "dirty": the outputs the notebooks write and the README's ledger.
OUTPUT_PATHS = ("figures", "executed", "results", "README.md")


def kernels_version() -> str:
    """The CPU kernels the outputs were computed with, as the claims CSV records them: the mode and the instruction set
    torch's kernels use ('avx2 (AVX2)'); the same on any machine that honours the pin, whatever its CPU model."""
    d = kernels.describe()
    return f"{d['mode']} ({d['capability']})"


def code_version(root: str | Path | None = None) -> str:
    """The code the outputs come from: 'pflnb <version> @ <commit>' (12 hex digits), with ' (dirty)' when tracked files
    outside the outputs (``figures/``, the README) differ from that commit; 'commit unknown' outside a git checkout."""
    root = Path(root) if root is not None else figures_root().parent
    head = f"pflnb {__version__}"
    try:
        git = lambda *a: subprocess.run(  # noqa: E731
            ["git", "-C", str(root), *a], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        commit = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":!{p}" for p in OUTPUT_PATHS))
    except (OSError, subprocess.SubprocessError):
        return f"{head} @ commit unknown"
    return f"{head} @ {commit[:12]}" + (" (dirty)" if changed else "")


def claims_table(claims: Iterable[Claim]) -> pd.DataFrame:
    """The claims as a DataFrame (claim, paper, ours, verdict as shown, verdict category, seeds, note, stand-in
    reason)."""
    return pd.DataFrame([c.row() for c in claims], columns=COLUMNS)


def write_claims(claims: Iterable[Claim], path: str | Path, code: str | None = None) -> pd.DataFrame:
    """Write the claims table to ``path`` (CSV, the ledger's input) with two last columns: ``kernels``, the CPU kernels
    it was computed under (:func:`kernels_version`), and ``code``, the code version it came from (``code``, default
    :func:`code_version`); return the table (without them)."""
    table = claims_table(claims)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.assign(**{KERNELS: kernels_version(), CODE: code if code is not None else code_version()}).to_csv(path, index=False)
    return table


def figures_root() -> Path:
    """The repository's ``figures/`` folder (where each paper's ``claims.csv`` is committed)."""
    return Path(__file__).resolve().parents[2] / "figures"


TIMING_PREFIX = "timing"  # outputs named timing*.csv hold wall-clock times: they vary run to run


def write_timing(table: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Write a table of wall-clock times to ``path`` (a CSV whose name starts with 'timing': ``make check-outputs``
    lists such files when they change but does not count them, since times vary from run to run); return it."""
    path = Path(path)
    if not path.name.startswith(TIMING_PREFIX) or path.suffix != ".csv":
        raise ValueError(f"a timing table's file name must be {TIMING_PREFIX}*.csv, got {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path)
    return table


def read_kernels(path: str | Path | IO[bytes]) -> str:
    """The CPU kernels a claims CSV (a path or an open binary file) records (:func:`kernels_version`; '' for a CSV
    written before they were)."""
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    values = sorted(set(t[KERNELS])) if KERNELS in t.columns else []
    return ", ".join(values)


def read_claims(path: str | Path | IO[bytes]) -> tuple[pd.DataFrame, str]:
    """A claims CSV (a path or an open binary file) as (table with :data:`COLUMNS`, the code version it records; ''
    for a CSV written without one). A CSV written before a column of :data:`OPTIONAL` existed reads with that column's
    default ('' stand-in)."""
    path = Path(path) if isinstance(path, str | Path) else path
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    t = t.assign(**{k: v for k, v in OPTIONAL.items() if k not in t.columns})
    missing = set(COLUMNS) - set(t.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}; regenerate it by running its notebook")
    versions = sorted(set(t[CODE])) if CODE in t.columns else []
    if len(versions) > 1:
        raise ValueError(f"{path}: rows from several code versions {versions}")
    return t[COLUMNS], (versions[0] if versions else "")


def mean_std_str(values: Sequence[float] | np.ndarray, scale: float = 100.0, digits: int = 1) -> str:
    """'mean ± std (n=k)' of ``values`` × ``scale`` (sample std, ddof=1; 0 for a single value)."""
    v = np.asarray(values, dtype=float) * scale
    std = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return f"{v.mean():.{digits}f} ± {std:.{digits}f} (n={v.size})"


# The ledger's names, read as R.<name> by the commands and the site (it imports this module: so, last)
from pflnb.experiments.ledger import (  # noqa: E402, F401
    COUNTED,
    LEDGER_COLUMNS,
    LEDGER_END,
    LEDGER_START,
    MOVES_COLUMNS,
    MOVES_FILE,
    NOT_CHECKED,
    OUR_CHECKS,
    PAPER_SETTING_FILE,
    PAPERS,
    RENAMES_COLUMNS,
    RENAMES_FILE,
    RULE_COLUMNS,
    SITE_LEDGER,
    SITE_LEDGER_HTML,
    SKIPPED,
    SMALLER_COUNT,
    ledger,
    ledger_counts,
    ledger_markdown,
    ledger_moves,
    markdown_table,
    old_rule_papers,
    paper_setting_claims,
    paper_setting_text,
    readme_ledger_markdown,
    readme_ledger_text,
    readme_with_ledger,
    robustness_now,
)
