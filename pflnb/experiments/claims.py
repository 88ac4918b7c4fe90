"""The one verdict rule behind every claims table, and the ledger of all papers' claims.

Every claim a paper notebook tests is decided here, by the kind of claim it is:

* **comparative** ("A beats B", "A beats B by δ points"): the unit is the seed. Per-seed paired differences
  (same seed = same data, partition and init for both methods) give a two-sided 90 % t-interval of the mean
  difference (n − 1 degrees of freedom). **reproduced** when the interval lies on the claimed side of 0 (and does
  not lie entirely below a claimed margin δ); **contradicted** when it lies on the other side of 0, or entirely below
  δ ("smaller than claimed"); **inconclusive (n seeds)** otherwise. One seed has no interval: inconclusive whatever
  its size. Ranking claims ("A is best") compare A with its strongest competitor by the same rule (:func:`best`).
* **identities and theory checks**: **reproduced** when the residual is within a stated tolerance, else
  **contradicted** (:func:`identity`, :func:`check`).
* **value claims** ("≈ X %"): the t-interval of the value against X ± a stated tolerance (:func:`value`).
* **partially reproduced** only for a claim declared with named parts, each with its own verdict (:func:`parts`);
  **not testable at this scale** for what the profile cannot run, with the reason (:func:`not_testable`).
* A claim on an extended experiment (a sweep or an analogue added for coverage) that a main-scope reproduction
  skipped is **not run**, with where it runs (:func:`not_run`); the committed ledger comes from the full reproduction,
  so it has none.
* A run that diverged has no accuracy: a claim that needs it is **diverged**, never a number.
* A claim decided by a criterion other than the paper's own statement (a weaker sufficient condition, a toy in place
  of the paper's setting, a threshold of ours, a reconstructed formula) is declared a **stand-in** with the reason
  (``Claim(..., stand_in=...)``): its shown verdict says '(stand-in)', the ledger lists the reasons, and its
  category (so every count) is the verdict's.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from pflnb import __version__

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partially reproduced"
NOT_TESTABLE = "not testable at this scale"
DIVERGED = "diverged"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, PARTIAL, NOT_TESTABLE, DIVERGED, NOT_RUN)
LEVEL = 0.90  # two-sided confidence level of every interval

Values = Mapping[int, float] | Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values and its two-sided t-interval at ``level`` (NaN bounds when n < 2)."""

    mean: float
    lo: float
    hi: float
    n: int
    level: float = LEVEL
    digits: int = 2

    def __str__(self) -> str:
        d = self.digits
        if self.n < 2:
            return f"{self.mean:+.{d}f} (1 seed, no interval)"
        return f"{self.mean:+.{d}f} [{self.lo:+.{d}f}, {self.hi:+.{d}f}]"


def _in_points(scale: float, unit: str) -> bool:
    """Values shown in percentage points: fractions scaled by 100, or values already in points (unit 'points…')."""
    return scale >= 100 or unit.startswith("points")


def _digits(scale: float, unit: str = "") -> int:
    """Decimals shown for values in percentage points (2) or raw units (4)."""
    return 2 if _in_points(scale, unit) else 4


def t_interval(values: Sequence[float] | np.ndarray, level: float = LEVEL, digits: int = 2) -> Interval:
    """Mean and two-sided ``level`` Student-t interval (n − 1 degrees of freedom) of ``values``."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError("t_interval needs at least one value")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    mean = float(v.mean())
    if v.size < 2:
        return Interval(mean, math.nan, math.nan, 1, level, digits)
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return Interval(mean, mean - half, mean + half, int(v.size), level, digits)


def _as_seed_map(values: Values, name: str) -> dict[int, float]:
    if isinstance(values, Mapping):
        return {int(k): float(v) for k, v in values.items()}
    return {i: float(v) for i, v in enumerate(np.asarray(values, dtype=float).ravel())}


def paired_differences(a: Values, b: Values) -> np.ndarray:
    """Per-seed differences a − b; mappings are matched by seed (the seed sets must be equal), sequences by position."""
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError("pass both values as {seed: value} mappings or both as sequences aligned by seed")
    ma, mb = _as_seed_map(a, "a"), _as_seed_map(b, "b")
    if set(ma) != set(mb):
        raise ValueError(f"paired comparison needs the same seeds for both sides: {sorted(ma)} vs {sorted(mb)}")
    if not ma:
        raise ValueError("paired comparison needs at least one seed")
    keys = sorted(ma)
    return np.array([ma[k] - mb[k] for k in keys])


def _mean_sd(values: Values, scale: float, unit: str = "") -> str:
    v = np.array(list(_as_seed_map(values, "v").values())) * scale
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    d = 1 if _in_points(scale, unit) else 3
    return f"{v.mean():.{d}f} ± {sd:.{d}f}"


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def _seed_word(n: int) -> str:
    return f"{n} seed" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class Outcome:
    """What a rule concluded: the verdict, what we measured (``ours``), the interval (if any) and a detail."""

    verdict: str
    ours: str
    interval: Interval | None = None
    detail: str = ""
    parts: tuple[tuple[str, Outcome], ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def n(self) -> int | None:
        """Seeds behind the interval (None for rules without one); for a claim in parts, the parts' common count."""
        if self.interval is not None:
            return self.interval.n
        counts = {o.n for _, o in self.parts} - {None}
        return counts.pop() if len(counts) == 1 else None

    @property
    def label(self) -> str:
        """The verdict as shown: 'inconclusive (n seeds)', 'contradicted (smaller than claimed)', ..."""
        return self.shown()

    def shown(self, *extra: str) -> str:
        """The verdict as shown, with ``extra`` words in its parentheses: 'reproduced (stand-in)',
        'contradicted (criterion fails; stand-in)', 'inconclusive (3 seeds; stand-in)'."""
        words = []
        if self.verdict == INCONCLUSIVE and self.n is not None:
            words.append(_seed_word(self.n))
        elif self.detail and self.verdict in (CONTRADICTED, NOT_TESTABLE, DIVERGED, NOT_RUN):
            words.append(self.detail)
        words += [e for e in extra if e]
        return f"{self.verdict} ({'; '.join(words)})" if words else self.verdict


def _diverged(*values: Values) -> bool:
    return any(not np.all(np.isfinite(list(_as_seed_map(v, "v").values()))) for v in values)


def compare(
    a: Values,
    b: Values,
    *,
    margin: float = 0.0,
    higher: bool = True,
    scale: float = 100.0,
    names: tuple[str, str] = ("A", "B"),
    unit: str = "points",
    level: float = LEVEL,
) -> Outcome:
    """Comparative claim 'A beats B (by ``margin``)' from per-seed paired differences and their t-interval.

    ``a`` and ``b`` are per-seed values ({seed: value} or sequences aligned by seed), scaled by ``scale`` (fractions →
    percentage points by default); ``margin`` δ ≥ 0 is in scaled units. ``higher=False`` claims A is *lower* than B
    (errors, times). A NaN value (a diverged run) makes the claim 'diverged'.
    """
    if margin < 0 or not math.isfinite(margin):
        raise ValueError(f"margin must be a finite number >= 0, got {margin}")
    na, nb = names
    if _diverged(a, b):
        return Outcome(DIVERGED, f"{na} vs {nb}: a run diverged", detail="a run diverged")
    shown = t_interval(paired_differences(a, b) * scale, level, _digits(scale, unit))  # A − B, as measured
    # the interval on the claimed side: A − B when A is claimed higher, B − A when claimed lower
    c_lo, c_hi = (shown.lo, shown.hi) if higher else (-shown.hi, -shown.lo)
    iv = shown
    what = f"{na} − {nb}" if higher else f"{na} − {nb} (claimed < 0)"
    ours = f"{na} {_mean_sd(a, scale, unit)} vs {nb} {_mean_sd(b, scale, unit)}; {what} = {shown}{_unit(unit)}"
    ours += f" ({int(level * 100)} % CI, {_seed_word(iv.n)})" if iv.n > 1 else " (1 seed)"
    if iv.n < 2:
        return Outcome(INCONCLUSIVE, ours, shown, "one seed has no interval")
    if c_hi < 0:
        return Outcome(CONTRADICTED, ours, shown, "the opposite holds")
    if margin > 0 and c_hi < margin:
        return Outcome(CONTRADICTED, ours, shown, f"smaller than claimed (δ = {margin:g} {unit})")
    if c_lo > 0:
        return Outcome(REPRODUCED, ours, shown)
    return Outcome(INCONCLUSIVE, ours, shown, "the interval contains 0")


def best(
    a: Values, others: Mapping[str, Values], *, name: str = "A", higher: bool = True, scale: float = 100.0, **kw: object
) -> Outcome:
    """Ranking claim 'A is best': A against its strongest competitor (best mean) under :func:`compare`."""
    if not others:
        raise ValueError("best() needs at least one competitor")
    means = {k: float(np.mean(list(_as_seed_map(v, k).values()))) for k, v in others.items()}
    finite = {k: m for k, m in means.items() if math.isfinite(m)}
    pool = finite or means
    strongest = max(pool, key=pool.get) if higher else min(pool, key=pool.get)
    out = compare(a, others[strongest], higher=higher, scale=scale, names=(name, strongest), **kw)  # type: ignore[arg-type]
    return Outcome(out.verdict, f"vs strongest competitor {strongest}: {out.ours}", out.interval, out.detail)


def residual_text(residual: float, tol: float | None = None) -> str:
    """A residual as text that repeats from run to run: within ``tol`` (or, without one, below 1e-12, the level of
    floating-point noise in float64), only its bound ``≤ 1e-k`` with k a multiple of 3, so that the last digits of
    rounding noise never show; above it, three significant digits (a real, reproducible gap)."""
    r = abs(float(residual))
    if not math.isfinite(r):
        return f"{r}"
    if r == 0:
        return "0"
    limit = tol if tol is not None else 1e-12
    if r <= limit:
        exp = 3 * math.ceil(math.log10(r) / 3)
        return f"≤ 1e{exp}" if 10.0**exp < limit else f"≤ {limit:.0e}"
    return f"{r:.2e}"


def ratio_text(ratio: float) -> str:
    """A wall-clock ratio as text that repeats: its order of magnitude ('≥ 1000×', '≥ 10×') for ratios ≥ 10,
    else rounded to the nearest 0.5× ('≈ 1.5×'). Timings vary run to run; exact values go to a timing table."""
    r = float(ratio)
    if not math.isfinite(r) or r <= 0:
        return f"{r}×"
    if r >= 10:
        return f"≥ {10 ** math.floor(math.log10(r)):,}×"
    return f"≈ {round(2 * r) / 2:.1f}×"


def identity(residual: float, tol: float, *, what: str = "max |residual|") -> Outcome:
    """Exact identity or theory check: reproduced when |residual| ≤ ``tol``, contradicted otherwise. The residual is
    shown as :func:`residual_text` (its bound when within tolerance, so floating-point noise does not show)."""
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    r = abs(float(residual))
    shown = residual_text(r, tol)
    ours = f"{what} {'' if shown.startswith('≤') else '= '}{shown} (tolerance {tol:.0e})"
    if not math.isfinite(r):
        return Outcome(DIVERGED, ours, detail="non-finite residual")
    return Outcome(REPRODUCED if r <= tol else CONTRADICTED, ours, detail="" if r <= tol else "residual above tolerance")


def check(holds: bool, ours: str, *, criterion: str) -> Outcome:
    """A theory check with a stated pass criterion (e.g. 'max g_i·d < 0'): reproduced if it holds, else contradicted."""
    if not criterion:
        raise ValueError("check() needs the stated criterion")
    text = f"{ours} [criterion: {criterion}]"
    return Outcome(REPRODUCED if holds else CONTRADICTED, text, detail="" if holds else "criterion fails")


def value(values: Values, target: float, tol: float, *, scale: float = 100.0, unit: str = "points") -> Outcome:
    """Value claim '≈ target': reproduced when the t-interval lies within target ± tol, contradicted when it lies
    entirely outside, inconclusive otherwise (and with one seed). ``target`` and ``tol`` are in scaled units."""
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if _diverged(values):
        return Outcome(DIVERGED, "a run diverged", detail="a run diverged")
    iv = t_interval(np.array(list(_as_seed_map(values, "v").values())) * scale, digits=_digits(scale, unit))
    ours = f"{iv}{_unit(unit)} vs {target:g} ± {tol:g}"
    if iv.n < 2:
        return Outcome(INCONCLUSIVE, ours + " (1 seed)", iv, "one seed has no interval")
    ours += f" ({int(iv.level * 100)} % CI, {_seed_word(iv.n)})"
    lo, hi = target - tol, target + tol
    if lo <= iv.lo and iv.hi <= hi:
        return Outcome(REPRODUCED, ours, iv)
    if iv.hi < lo or iv.lo > hi:
        return Outcome(CONTRADICTED, ours, iv, "outside the tolerance")
    return Outcome(INCONCLUSIVE, ours, iv, "the interval straddles the tolerance")


def not_testable(reason: str) -> Outcome:
    """A claim this profile cannot test, with the reason."""
    if not reason:
        raise ValueError("not_testable() needs the reason")
    return Outcome(NOT_TESTABLE, "—", detail=reason)


def not_run(where: str) -> Outcome:
    """A claim whose experiments this reproduction skipped (the main scope skips the extended ones), with ``where``
    it runs."""
    if not where:
        raise ValueError("not_run() needs where the claim runs")
    return Outcome(NOT_RUN, "—", detail=where)


def parts(**named: Outcome) -> Outcome:
    """A claim declared with named parts: each part keeps its verdict; the whole is reproduced (all parts
    reproduced), partially reproduced (some but not all reproduced), contradicted (none reproduced, one contradicted),
    not testable (no part testable) or inconclusive."""
    if len(named) < 2:
        raise ValueError("parts() needs at least two named parts")
    verdicts = [o.verdict for o in named.values()]
    testable = [v for v in verdicts if v != NOT_TESTABLE]
    if not testable:
        whole = NOT_TESTABLE
    elif all(v == REPRODUCED for v in testable) and len(testable) == len(verdicts):
        whole = REPRODUCED
    elif REPRODUCED in testable:
        whole = PARTIAL
    elif CONTRADICTED in testable:
        whole = CONTRADICTED
    else:
        whole = INCONCLUSIVE
    ours = "; ".join(f"{k}: {o.label} — {o.ours}" for k, o in named.items())
    return Outcome(whole, ours, detail="by part" if whole == CONTRADICTED else "", parts=tuple(named.items()))


STAND_IN = "stand-in"  # the word the shown verdict of a stand-in claim carries


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, the paper's value, and the outcome of the verdict rule on our numbers.

    ``stand_in``: where the verdict is decided by a criterion other than the paper's own statement (a weaker
    sufficient condition, a toy in place of the paper's setting, a threshold of ours, a reconstructed formula), the
    reason, saying what the paper states and what is tested instead. The shown verdict then says '(stand-in)'; the
    category, and so the counts, stay the verdict's.
    """

    claim: str
    paper: str
    outcome: Outcome
    note: str = ""
    seeds: Sequence[int] | None = field(default=None)
    stand_in: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.stand_in, str) or self.stand_in != self.stand_in.strip():
            raise ValueError(f"stand_in must be the reason as a trimmed string ('' for none), got {self.stand_in!r}")

    @property
    def verdict(self) -> str:
        """The verdict category (one of :data:`VERDICTS`)."""
        return self.outcome.verdict

    @property
    def label(self) -> str:
        """The verdict as shown, '(stand-in)' added for a stand-in claim."""
        return self.outcome.shown(STAND_IN if self.stand_in else "")

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
        }


COLUMNS = ["claim", "paper", "ours", "verdict", "category", "seeds", "note", "stand_in"]
OPTIONAL = {"stand_in": ""}  # columns a CSV written by older code may lack, and the value they read as
CODE = "code"  # the CSV's last column: the code version the claims came from (:func:`code_version`)
# Paths whose changes do not make the code "dirty": the outputs the notebooks write and the README's ledger.
OUTPUT_PATHS = ("figures", "executed", "results", "README.md")


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
    """Write the claims table to ``path`` (CSV, the ledger's input) with a last column ``code`` recording the code
    version it came from (``code``, default :func:`code_version`), and return the table (without that column)."""
    table = claims_table(claims)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.assign(**{CODE: code if code is not None else code_version()}).to_csv(path, index=False)
    return table


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


def read_claims(path: str | Path) -> tuple[pd.DataFrame, str]:
    """A claims CSV as (table with :data:`COLUMNS`, the code version it records; '' for a CSV written without one).
    A CSV written before a column of :data:`OPTIONAL` existed reads with that column's default ('' stand-in)."""
    path = Path(path)
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


# ---------------------------------------------------------------------------------------------------- the ledger

PAPERS = {"lgmix": "LG-Mix", "fedco2": "Fed-CO2", "fedpg": "FedPG", "pmixfed": "pMixFed", "fedfac": "FedSplit/FedFac"}
COUNTED = (REPRODUCED, PARTIAL, CONTRADICTED, INCONCLUSIVE, NOT_TESTABLE, DIVERGED)
SKIPPED = (NOT_RUN,)  # counted only where a (main-scope) ledger has them


def figures_root() -> Path:
    """The repository's ``figures/`` folder (where each paper's ``claims.csv`` is committed)."""
    return Path(__file__).resolve().parents[2] / "figures"


def ledger(root: str | Path | None = None) -> pd.DataFrame:
    """Every paper's claims in one table (paper, claim, paper value, ours, verdict) from ``figures/<paper>/claims.csv``."""
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
    return t.rename(columns={"paper": "paper value"}).rename(columns={"paper_name": "paper"})[
        ["paper", "claim", "paper value", "ours", "verdict", "category", "seeds", "stand_in", CODE]
    ]


def ledger_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Count of claims per paper and verdict category (reproduced, partially, contradicted, inconclusive, ...), their
    total, and how many of them are stand-ins (counted in their verdict category as well)."""
    shown = [*COUNTED, *(c for c in SKIPPED if (table["category"] == c).any())]
    counts = pd.crosstab(table["paper"], table["category"]).reindex(columns=shown, fill_value=0)
    order = [p for p in PAPERS.values() if p in counts.index]
    counts = counts.loc[order]
    counts["total"] = counts.sum(axis=1)
    marked = table.stand_in.astype(bool) if "stand_in" in table.columns else pd.Series(False, index=table.index)
    counts[STAND_IN] = marked.groupby(table["paper"]).sum().reindex(counts.index, fill_value=0).astype(int)
    return counts.reset_index()


def _md(table: pd.DataFrame) -> str:
    cols = list(table.columns)
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def ledger_markdown(root: str | Path | None = None) -> str:
    """The ledger as Markdown: counts per paper, then every claim (``pflnb claims --markdown``)."""
    t = ledger(root)
    body = t[["paper", "claim", "paper value", "ours", "verdict"]]
    text = _md(ledger_counts(t)) + "\n\n" + _md(body)
    marked = t[t.stand_in != ""]
    if len(marked):
        reasons = marked[["paper", "claim", "stand_in"]].rename(columns={"stand_in": "what the paper states, what we test"})
        text += "\n\nStand-ins: claims decided by a criterion other than the paper's own statement.\n\n" + _md(reasons)
    return text


LEDGER_START, LEDGER_END = "<!-- claims-ledger:start -->", "<!-- claims-ledger:end -->"
# Where the README points for every claim: the site's ledger page (its source, and the page `make site` builds)
SITE_LEDGER = "docs/ledger.md"
SITE_LEDGER_HTML = "_site/html/ledger.html"


def readme_ledger_markdown(root: str | Path | None = None) -> str:
    """The README's results overview: the count of claims per paper and verdict, and where every claim is (the
    site's ledger page, ``pflnb claims``). Deterministic: no dates, no commit ids (``pflnb check-outputs`` compares
    it before and after a reproduction)."""
    counts = _md(ledger_counts(ledger(root)))
    return (
        f"{counts}\n\n"
        f"Every claim, with the paper's value, ours with its 90 % interval, the seeds and the verdict: the site's "
        f"[claims ledger]({SITE_LEDGER}) (`make site`, then open `{SITE_LEDGER_HTML}`), or `pflnb claims`."
    )


def readme_with_ledger(readme: str, root: str | Path | None = None) -> str:
    """``readme`` with the text between the ledger markers replaced by :func:`readme_ledger_markdown`."""
    if LEDGER_START not in readme or LEDGER_END not in readme:
        raise ValueError(f"the README has no ledger markers {LEDGER_START} ... {LEDGER_END}")
    head, rest = readme.split(LEDGER_START, 1)
    _, tail = rest.split(LEDGER_END, 1)
    return f"{head}{LEDGER_START}\n{readme_ledger_markdown(root)}\n{LEDGER_END}{tail}"
