"""The statistics behind every verdict: the level of every interval, the paired per-seed differences, Student-t
intervals, one-sided p-values from an interval, and Holm's correction over a claim's parts.

:mod:`pflnb.experiments.verdicts` turns these numbers into verdicts; nothing here knows what a claim is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.90  # two-sided confidence level of every interval
ALPHA = (1 - LEVEL) / 2  # the one-sided level that matches it: an interval beyond a bound ⇔ a one-sided p ≤ ALPHA

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


def as_seed_map(values: Values, name: str = "values") -> dict[int, float]:
    """``values`` as {seed: value}: a mapping keeps its seeds, a sequence is numbered by position."""
    if isinstance(values, Mapping):
        return {int(k): float(v) for k, v in values.items()}
    return {i: float(v) for i, v in enumerate(np.asarray(values, dtype=float).ravel())}


def paired_differences(a: Values, b: Values) -> np.ndarray:
    """Per-seed differences a − b; mappings are matched by seed (the seed sets must be equal), sequences by position."""
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError("pass both values as {seed: value} mappings or both as sequences aligned by seed")
    ma, mb = as_seed_map(a, "a"), as_seed_map(b, "b")
    if set(ma) != set(mb):
        raise ValueError(f"paired comparison needs the same seeds for both sides: {sorted(ma)} vs {sorted(mb)}")
    if not ma:
        raise ValueError("paired comparison needs at least one seed")
    keys = sorted(ma)
    return np.array([ma[k] - mb[k] for k in keys])


def p_below(iv: Interval, bound: float) -> float | None:
    """One-sided p-value of 'the mean lies below ``bound``' from the interval's t statistic (None with one value)."""
    if iv.n < 2:
        return None
    half = iv.hi - iv.mean
    se = half / float(stats.t.ppf(0.5 + iv.level / 2, iv.n - 1))
    if se == 0:
        return 0.0 if iv.mean < bound else 1.0
    return float(stats.t.cdf((iv.mean - bound) / se, iv.n - 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of ``p_values`` (in their order): the family-wise error stays at the level
    whichever of the hypotheses are true."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
