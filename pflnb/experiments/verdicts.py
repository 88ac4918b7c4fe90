"""The one verdict rule behind every claims table: the floor, word sizes, and the outcome of each kind of claim (the
intervals and p-values it reads come from :mod:`pflnb.experiments.statistics`).

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

import contextlib
import contextvars
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np

from pflnb.experiments.statistics import (
    ALPHA,
    LEVEL,
    Interval,
    Values,
    as_seed_map,
    holm,
    p_below,
    paired_differences,
    t_interval,
)

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partially reproduced"
NOT_TESTABLE = "not testable at this scale"
DIVERGED = "diverged"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, PARTIAL, NOT_TESTABLE, DIVERGED, NOT_RUN)


def _in_points(scale: float, unit: str) -> bool:
    """Values shown in percentage points: fractions scaled by 100, or values already in points (unit 'points…')."""
    return scale >= 100 or unit.startswith("points")


def _digits(scale: float, unit: str = "") -> int:
    """Decimals shown for values in percentage points (2) or raw units (4)."""
    return 2 if _in_points(scale, unit) else 4


def _mean_sd(values: Values, scale: float, unit: str = "") -> str:
    v = np.array(list(as_seed_map(values, "v").values())) * scale
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
    p_against: float | None = None  # one-sided p-value of the test that contradicts the claim (None: no such test)
    claimed: int = 0  # the sign the claim gives A − B (the interval's difference): +1, −1, or 0 (no direction claimed)

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
        if self.detail and (
            self.verdict in (CONTRADICTED, NOT_TESTABLE, DIVERGED, NOT_RUN) or self.detail.startswith((HOLM_DEMOTED, CONFOUNDED))
        ):
            words.append(self.detail)
        words += [e for e in extra if e]
        return f"{self.verdict} ({'; '.join(words)})" if words else self.verdict


def _diverged(*values: Values) -> bool:
    return any(not np.all(np.isfinite(list(as_seed_map(v, "v").values()))) for v in values)


# ---- the sizes of words -----------------------------------------------------------------------------------------------

# What a paper's words of size commit to, in accuracy points (of 100), the same in every paper: a fixed fraction of the
# scale, declared here once and never read from the effect of the claim being decided (a margin equal to the paper's
# own effect would put a reproduction that matched the paper exactly on the boundary, failing about half the time).
# Where a paper states a number ("less than 1 %"), the number is the criterion instead.
WORD_SIZES: dict[str, float] = {
    "much": 2.0,  # a claimed size δ: "much", "markedly", "far": a fiftieth of the scale
    "about equal": 2.0,  # an equivalence margin ε: "maintains", "≈", "nearly identical", "comparable"
    "a little": 10.0,  # an equivalence margin ε: "a little", "slightly" (a loss the paper admits): a tenth
}


def word_size(word: str) -> float:
    """The size :data:`WORD_SIZES` gives the word class ``word`` (points); KeyError naming the classes otherwise."""
    if word not in WORD_SIZES:
        raise KeyError(f"no size for {word!r}; the word classes are {sorted(WORD_SIZES)}")
    return WORD_SIZES[word]


# ---- arms that did not train ---------------------------------------------------------------------------------------

FLOOR_MARGIN = 5.0  # points above chance: an arm whose mean accuracy stays below chance + this did not train


@dataclass(frozen=True)
class Floor:
    """The one rule for arms that did not train: mean accuracy over the seeds below chance (1 / classes) plus
    :data:`FLOOR_MARGIN` points. :func:`decide <pflnb.experiments.paper.decide>` sets it for each claim from the
    experiments the claim reads (:func:`floor`)."""

    chance: float  # as a fraction
    margin: float = FLOOR_MARGIN  # in points

    def __post_init__(self) -> None:
        if not 0 < self.chance < 1 or not self.margin >= 0:
            raise ValueError(f"a floor needs 0 < chance < 1 and margin >= 0, got {self.chance}, {self.margin}")

    @property
    def points(self) -> float:
        """The floor in percentage points."""
        return 100 * self.chance + self.margin


_FLOOR: contextvars.ContextVar[Floor | None] = contextvars.ContextVar("pflnb_floor", default=None)


@contextlib.contextmanager
def floor(rule: Floor | None) -> Iterator[None]:
    """Within the block, accuracy comparisons check each side against ``rule`` (None: no floor, e.g. for a claim
    whose statement is the failure itself)."""
    token = _FLOOR.set(rule)
    try:
        yield
    finally:
        _FLOOR.reset(token)


class Untuned(dict):
    """{seed: value} of an arm whose tuning found no value that trained: every candidate diverged or collapsed below
    the floor on a tuning seed, so its runs use the first value tried, not a choice (``why`` says which cell).
    :func:`did_not_train` treats it as an arm that did not train: a comparison with an untuned arm says nothing about
    the methods (:meth:`~pflnb.experiments.result.ExperimentResult.values` returns it)."""

    def __init__(self, values: Mapping[int, float], why: str) -> None:
        super().__init__(values)
        self.why = why


def marked(values: Mapping[int, float], rows: object) -> dict[int, float]:
    """``values`` as :class:`Untuned` when the table ``rows`` they were read from holds a run of an untuned arm (a
    non-empty ``untuned`` column, set by :func:`~pflnb.experiments.tuning.run_experiment`), else as they are: how a
    paper's own per-seed helpers pass the mark on to the floor rule."""
    if "untuned" in getattr(rows, "columns", ()):
        why = sorted({str(w) for w in rows["untuned"] if isinstance(w, str) and w})
        if why:
            return Untuned(values, "; ".join(why))
    return dict(values)


def did_not_train(name: str, values: Values, scale: float = 100.0) -> str:
    """'<name> did not train (<acc> %, chance <c> %)' when the floor in effect marks the arm failed, '<name> had no
    value that trained on the tuning seeds (...)' for :class:`Untuned` values while a floor is in effect, else ''."""
    rule = _FLOOR.get()
    if rule is None:
        return ""
    if isinstance(values, Untuned):
        return f"{name} had no value that trained on the tuning seeds ({values.why}; its runs are untuned)"
    v = np.array(list(as_seed_map(values, name).values()), dtype=float) * scale
    if not np.all(np.isfinite(v)):
        return ""
    mean = float(v.mean())
    return f"{name} did not train ({mean:.1f} %, chance {100 * rule.chance:.1f} %)" if mean < rule.points else ""


def trained(**arms: Values) -> Outcome | None:
    """For a rule that reads an arm's accuracy without comparing it directly (a share of clients above the arm, a
    gap): **not testable** naming the first arm below the floor in effect, or None when every arm trained."""
    for name, values in arms.items():
        why = did_not_train(name, values)
        if why:
            return not_testable(why)
    return None


# ---- comparative claims --------------------------------------------------------------------------------------------


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
    accuracy: bool | None = None,
) -> Outcome:
    """Comparative claim 'A beats B (by ``margin``)' from per-seed paired differences and their t-interval.

    ``a`` and ``b`` are per-seed values ({seed: value} or sequences aligned by seed), scaled by ``scale`` (fractions →
    percentage points by default); ``margin`` δ ≥ 0 is in scaled units: a claim the paper states with a size is
    reproduced only when the interval lies above δ, contradicted ("smaller than claimed") when it lies below δ.
    ``higher=False`` claims A is *lower* than B (errors, times). A NaN value (a diverged run) makes the claim
    'diverged'. ``accuracy`` (default: values in percentage points of a fraction, the default scale and unit): each
    side is checked against the floor in effect (:func:`floor`); an arm below it makes the claim not testable.
    """
    if margin < 0 or not math.isfinite(margin):
        raise ValueError(f"margin must be a finite number >= 0, got {margin}")
    na, nb = names
    if _diverged(a, b):
        return Outcome(DIVERGED, f"{na} vs {nb}: a run diverged", detail="a run diverged")
    if accuracy is None:
        accuracy = scale == 100.0 and unit == "points"
    if accuracy:
        for name, values in ((na, a), (nb, b)):
            why = did_not_train(name, values, scale)
            if why:
                return Outcome(NOT_TESTABLE, f"{na} {_mean_sd(a, scale, unit)} vs {nb} {_mean_sd(b, scale, unit)}", detail=why)
    shown = t_interval(paired_differences(a, b) * scale, level, _digits(scale, unit))  # A − B, as measured
    # the interval on the claimed side: A − B when A is claimed higher, B − A when claimed lower
    claimed = shown if higher else Interval(-shown.mean, -shown.hi, -shown.lo, shown.n, shown.level, shown.digits)
    what = f"{na} − {nb}" if higher else f"{na} − {nb} (claimed < 0)"
    ours = f"{na} {_mean_sd(a, scale, unit)} vs {nb} {_mean_sd(b, scale, unit)}; {what} = {shown}{_unit(unit)}"
    ours += f" ({int(level * 100)} % CI, {_seed_word(shown.n)})" if shown.n > 1 else " (1 seed)"
    if margin:
        ours += f"; claimed size δ = {margin:g}{_unit(unit)}"
    p = p_below(claimed, margin)
    sign = 1 if higher else -1
    if shown.n < 2:
        return Outcome(INCONCLUSIVE, ours, shown, "one seed has no interval", claimed=sign)
    if claimed.hi < 0:
        return Outcome(CONTRADICTED, ours, shown, "the opposite holds", p_against=p, claimed=sign)
    if margin > 0 and claimed.hi < margin:
        return Outcome(CONTRADICTED, ours, shown, f"smaller than claimed (δ = {margin:g} {unit})", p_against=p, claimed=sign)
    if claimed.lo > margin:
        return Outcome(REPRODUCED, ours, shown, p_against=p, claimed=sign)
    if margin > 0 and claimed.lo > 0:
        return Outcome(
            INCONCLUSIVE, ours, shown, f"above 0, the claimed size δ = {margin:g} not shown", p_against=p, claimed=sign
        )
    return Outcome(INCONCLUSIVE, ours, shown, "the interval contains 0", p_against=p, claimed=sign)


def equivalent(
    a: Values,
    b: Values,
    *,
    margin: float,
    scale: float = 100.0,
    names: tuple[str, str] = ("A", "B"),
    unit: str = "points",
    level: float = LEVEL,
) -> Outcome:
    """Equivalence claim 'A ≈ B', 'insensitive to X', 'robust to Y' by two one-sided tests (TOST) on the per-seed paired
    differences against the equivalence margin ε = ``margin`` (scaled units): **reproduced** when the 90 % interval
    lies within ±ε (both one-sided tests reject at 5 %), **contradicted** when it lies entirely outside ±ε (a
    difference larger than ε shown), **inconclusive** otherwise."""
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"an equivalence margin must be a finite number > 0, got {margin}")
    na, nb = names
    if _diverged(a, b):
        return Outcome(DIVERGED, f"{na} vs {nb}: a run diverged", detail="a run diverged")
    iv = t_interval(paired_differences(a, b) * scale, level, _digits(scale, unit))
    ours = f"{na} {_mean_sd(a, scale, unit)} vs {nb} {_mean_sd(b, scale, unit)}; {na} − {nb} = {iv}{_unit(unit)}"
    ours += f" vs ±{margin:g} ({int(level * 100)} % CI, {_seed_word(iv.n)}; TOST)" if iv.n > 1 else " (1 seed)"
    if iv.n < 2:
        return Outcome(INCONCLUSIVE, ours, iv, "one seed has no interval")
    below, above = p_below(iv, -margin), p_below(Interval(-iv.mean, -iv.hi, -iv.lo, iv.n, iv.level), -margin)
    p = min(x for x in (below, above) if x is not None)
    if -margin <= iv.lo and iv.hi <= margin:
        return Outcome(REPRODUCED, ours, iv, p_against=p)
    if iv.hi < -margin or iv.lo > margin:
        return Outcome(CONTRADICTED, ours, iv, f"differs by more than ±{margin:g}", p_against=p)
    return Outcome(INCONCLUSIVE, ours, iv, f"the interval reaches beyond ±{margin:g}", p_against=p)


def best(
    a: Values,
    others: Mapping[str, Values],
    *,
    select: Mapping[str, Values] | None,
    name: str = "A",
    higher: bool = True,
    scale: float = 100.0,
    paired: str | None = None,
    **kw: object,
) -> Outcome:
    """Ranking claim 'A is best': A against its strongest competitor under :func:`compare`.

    The strongest competitor is chosen on ``select`` (competitor → per-seed *validation* values, higher is stronger),
    never on the values compared (test data): a test fails if this reads ``others``. ``select=None`` where no
    validation counterpart exists: A against every competitor, a conjunction (:func:`parts`: reproduced only when A
    beats each one).

    ``paired`` (with ``select=None``): the competitor the paper's own effect is measured against (its strongest in
    that cell); A − ``paired`` carries the interval the paper's effect is read against, the same pair on both sides.
    Without it the conjunction has no interval: the competitor with our smallest lead would be a choice made on the
    test values, and the smallest of several noisy leads is biased low."""
    if not others:
        raise ValueError("best() needs at least one competitor")
    if paired is not None and (select is not None or paired not in others):
        raise ValueError(f"best(paired={paired!r}) names the paper's competitor among {sorted(others)}, with select=None only")
    if select is None:
        if len(others) == 1:
            ((k, v),) = others.items()
            return compare(a, v, higher=higher, scale=scale, names=(name, k), **kw)  # type: ignore[arg-type]
        each = {f"vs {k}": compare(a, v, higher=higher, scale=scale, names=(name, k), **kw) for k, v in others.items()}  # type: ignore[arg-type]
        out = parts(**each)
        # the verdict stays the conjunction's; the interval, for the paper's effect, is the paper's own pair's
        interval = each[f"vs {paired}"].interval if paired is not None else None
        ours = f"against every competitor (no validation counterpart): {out.ours}"
        return replace(out, ours=ours, interval=interval, claimed=1 if higher else -1)
    missing = sorted(set(others) - set(select))
    if missing:
        raise ValueError(f"best() needs a validation value of every competitor; missing {missing}")
    means = {k: float(np.mean(list(as_seed_map(select[k], k).values()))) for k in others}
    finite = {k: m for k, m in means.items() if math.isfinite(m)}
    pool = finite or means
    strongest = max(pool, key=pool.get)
    out = compare(a, others[strongest], higher=higher, scale=scale, names=(name, strongest), **kw)  # type: ignore[arg-type]
    chosen = f"vs strongest competitor {strongest} (chosen on validation)"
    return replace(out, ours=f"{chosen}: {out.ours}")


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
    return Outcome(
        REPRODUCED if r <= tol else CONTRADICTED,
        ours,
        detail="" if r <= tol else "residual above tolerance",
        p_against=1.0 if r <= tol else 0.0,  # deterministic: a residual above tolerance is no sampling accident
    )


def check(holds: bool, ours: str, *, criterion: str) -> Outcome:
    """A theory check with a stated pass criterion (e.g. 'max g_i·d < 0'): reproduced if it holds, else contradicted."""
    if not criterion:
        raise ValueError("check() needs the stated criterion")
    text = f"{ours} [criterion: {criterion}]"
    return Outcome(
        REPRODUCED if holds else CONTRADICTED, text, detail="" if holds else "criterion fails", p_against=1.0 if holds else 0.0
    )


def value(values: Values, target: float, tol: float, *, scale: float = 100.0, unit: str = "points") -> Outcome:
    """Value claim '≈ target': reproduced when the t-interval lies within target ± tol, contradicted when it lies
    entirely outside, inconclusive otherwise (and with one seed). ``target`` and ``tol`` are in scaled units."""
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if _diverged(values):
        return Outcome(DIVERGED, "a run diverged", detail="a run diverged")
    iv = t_interval(np.array(list(as_seed_map(values, "v").values())) * scale, digits=_digits(scale, unit))
    ours = f"{iv}{_unit(unit)} vs {target:g} ± {tol:g}"
    if iv.n < 2:
        return Outcome(INCONCLUSIVE, ours + " (1 seed)", iv, "one seed has no interval")
    ours += f" ({int(iv.level * 100)} % CI, {_seed_word(iv.n)})"
    lo, hi = target - tol, target + tol
    below = p_below(iv, lo)
    above = p_below(Interval(-iv.mean, -iv.hi, -iv.lo, iv.n, iv.level), -hi)
    p = min(x for x in (below, above) if x is not None)
    if lo <= iv.lo and iv.hi <= hi:
        return Outcome(REPRODUCED, ours, iv, p_against=p)
    if iv.hi < lo or iv.lo > hi:
        return Outcome(CONTRADICTED, ours, iv, "outside the tolerance", p_against=p)
    return Outcome(INCONCLUSIVE, ours, iv, "the interval straddles the tolerance", p_against=p)


CONFOUNDED = "confounded"  # the detail of an inconclusive verdict whose comparison carries a named confound


def confounded(outcome: Outcome, confound: str) -> Outcome:
    """``outcome`` of a comparison that carries ``confound`` (something else differs between the arms besides what
    the claim is about): a verdict that would be reproduced, partial or contradicted is **inconclusive**, its detail
    'confounded: <confound>'; the numbers and interval are kept. Unchanged without a confound or for verdicts that
    decided nothing (inconclusive, not testable, diverged, not run)."""
    if not confound or outcome.verdict not in (REPRODUCED, PARTIAL, CONTRADICTED):
        return outcome
    was = outcome.verdict
    return replace(outcome, verdict=INCONCLUSIVE, detail=f"{CONFOUNDED}: {confound} (would be {was})")


def not_testable(reason: str) -> Outcome:
    """A claim this profile cannot test, with the reason."""
    if not reason:
        raise ValueError("not_testable() needs the reason")
    return Outcome(NOT_TESTABLE, "—", detail=reason)


def consistency(ours: str, reason: str) -> Outcome:
    """A check that cannot decide the claim, shown with what it measured: a bound checked outside its theorem's
    hypotheses, or an identity true by construction, bears on the claim neither when it holds nor when it fails.
    Not testable, with ``reason``; ``ours`` stays in the ledger."""
    if not reason:
        raise ValueError("consistency() needs the reason the check cannot decide the claim")
    return Outcome(NOT_TESTABLE, ours, detail=reason)


def not_run(where: str) -> Outcome:
    """A claim whose experiments this reproduction skipped (the main scope skips the extended ones), with ``where``
    it runs."""
    if not where:
        raise ValueError("not_run() needs where the claim runs")
    return Outcome(NOT_RUN, "—", detail=where)


HOLM_DEMOTED = "contradicted alone, not after Holm"  # a part's detail, shown beside its verdict


def _after_holm(named: Mapping[str, Outcome]) -> tuple[dict[str, Outcome], float | None]:
    """The parts with every contradiction that does not survive Holm's correction over the parts (one-sided, at
    :data:`ALPHA`) demoted to inconclusive, and the family's adjusted p-value of 'some part is contradicted'."""
    tested = {k: o.p_against for k, o in named.items() if o.p_against is not None}
    if not tested:
        return dict(named), None
    adjusted = dict(zip(tested, holm(list(tested.values()))))
    out = {}
    for k, o in named.items():
        if o.verdict == CONTRADICTED and adjusted.get(k, 0.0) > ALPHA:
            o = replace(o, verdict=INCONCLUSIVE, detail=f"{HOLM_DEMOTED} over {len(tested)} parts")
        out[k] = o
    return out, min(adjusted.values())


PARTS_TABLE = """\
| parts (after Holm's correction of the contradictions over the parts) | the claim |
|---|---|
| every part not testable (or not run) | not testable (not run) |
| some part contradicted | contradicted |
| every part reproduced | reproduced |
| some part reproduced, none contradicted | partially reproduced |
| none reproduced, none contradicted, some diverged | diverged |
| none reproduced, none contradicted, none diverged | inconclusive |"""


def parts(**named: Outcome) -> Outcome:
    """A claim declared with named parts is their conjunction (:data:`PARTS_TABLE`): **reproduced** only when every
    part is; **contradicted** when a part is contradicted after Holm's correction over the parts (one-sided, at
    :data:`ALPHA`, so that k parts do not give k chances of a contradiction by chance); **partially reproduced** when
    some parts hold and none is contradicted; else **diverged** (a part diverged) or **inconclusive**. Every part keeps
    its verdict, shown."""
    if len(named) < 2:
        raise ValueError("parts() needs at least two named parts")
    named, p = _after_holm(named)
    verdicts = [o.verdict for o in named.values()]
    skipped = (NOT_TESTABLE, NOT_RUN)
    if all(v in skipped for v in verdicts):
        whole = NOT_RUN if NOT_RUN in verdicts else NOT_TESTABLE
    elif CONTRADICTED in verdicts:
        whole = CONTRADICTED
    elif all(v == REPRODUCED for v in verdicts):
        whole = REPRODUCED
    elif REPRODUCED in verdicts:
        whole = PARTIAL
    elif DIVERGED in verdicts:
        whole = DIVERGED
    else:
        whole = INCONCLUSIVE
    ours = "; ".join(f"{k}: {o.label} — {o.ours}" for k, o in named.items())
    detail = {CONTRADICTED: "by part", NOT_TESTABLE: "no part testable", NOT_RUN: EXTENDED_PARTS}.get(whole, "")
    return Outcome(whole, ours, detail=detail, parts=tuple(named.items()), p_against=p)


EXTENDED_PARTS = "no part run"


def most(k: int, **named: Outcome) -> Outcome:
    """'In most cases': at least ``k`` of the named parts hold. **reproduced** when k or more parts are reproduced;
    **contradicted** when more than n − k are contradicted after Holm's correction (fewer than k can hold);
    **not testable** when fewer than k parts are testable and not contradicted (the parts this scale can test cannot
    make k, so only the untested ones could decide); else **inconclusive**. The parts stay visible."""
    n = len(named)
    if not 1 <= k <= n:
        raise ValueError(f"most() needs 1 <= k <= {n} parts, got k={k}")
    named, p = _after_holm(named)
    verdicts = [o.verdict for o in named.values()]
    testable = [v for v in verdicts if v not in (NOT_TESTABLE, NOT_RUN)]
    held, against = verdicts.count(REPRODUCED), verdicts.count(CONTRADICTED)
    if held >= k:
        whole, detail = REPRODUCED, ""
    elif against > n - k:
        whole, detail = CONTRADICTED, f"{against} of {n} contradicted: fewer than {k} can hold"
    elif len(testable) - against < k:
        open_ = len(testable) - against
        against_text = f" ({against} more contradicted)" if against else ""
        whole, detail = NOT_TESTABLE, f"only {open_} of {n} parts testable and not contradicted{against_text}, {k} needed"
    else:
        whole, detail = INCONCLUSIVE, ""
    ours = f"{held} of {n} hold ({k} claimed): " + "; ".join(f"{key}: {o.label} — {o.ours}" for key, o in named.items())
    return Outcome(whole, ours, detail=detail, parts=tuple(named.items()), p_against=p)


def checks_now(pinned: str, pinned_ours: str, verdict: str, ours: str, wall_clock: bool = False) -> bool:
    """Whether a row of the robustness table (``make robustness``: the claim's ``pinned`` verdict category and its
    numbers, ``pinned_ours``) still describes the claim as decided now (``verdict``, ``ours``): the same category and,
    but for a wall-clock claim (whose times differ every run), the same numbers. A row made on an earlier decision (the
    claim's rule or runs changed since) checked something else: the claim reads not checked until the table is rerun."""
    return pinned == verdict and (wall_clock or pinned_ours == ours)
