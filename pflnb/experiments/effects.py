"""The paper's own effect beside ours: where it lies against our interval (:func:`effect_position`,
:func:`effect_text`), and whether an inconclusive verdict rules out the paper's size (:func:`smaller_than_paper`;
the ledger counts such claims apart). Nothing here changes a verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping

from pflnb.experiments.verdicts import INCONCLUSIVE, Outcome


def effect_position(outcome: Outcome, effect: float) -> str:
    """Where the paper's effect (A − B, in the interval's units) lies against our interval: 'inside', 'above' or
    'below'; '' without an interval."""
    iv = outcome.interval
    if iv is None or iv.n < 2 or not math.isfinite(iv.lo):
        return ""
    return "above" if effect > iv.hi else "below" if effect < iv.lo else "inside"


# The words an inconclusive verdict carries when its interval lies between zero and the paper's own effect, on the side
# the claim states (in every part with an effect): our numbers rule out the size the paper reports, though not the
# claimed direction; the ledger counts them apart (SMALLER_COUNT).
SMALLER_THAN_PAPER = "smaller than the paper's effect"


def _effects(paper_effect: str) -> dict[str, float]:
    """{part name ('' for one effect): value} of :func:`effect_text`'s first string ('+2.74', 'x: +2.74; y: -1.1')."""
    out = {}
    for item in str(paper_effect or "").split(";"):
        name, _, value = item.rpartition(":")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            continue
    return out


def smaller_than_paper(outcome: Outcome, paper_effect: str) -> bool:
    """Whether an inconclusive ``outcome`` rules out the paper's effect (``paper_effect``, :func:`effect_text`'s first
    string) as too large: in every part with an effect, the claim states a direction (:attr:`Outcome.claimed`), the
    paper's effect points that way, and our whole interval lies on zero's side of it. A paper effect against the
    claimed direction, or an interval beyond the paper's effect (ours larger), does not count."""
    if outcome.verdict != INCONCLUSIVE:
        return False
    named = dict(outcome.parts)
    judged = []
    for name, effect in _effects(paper_effect).items():
        part = outcome if name == "" else named.get(name)
        iv = part.interval if part is not None else None
        if iv is None or iv.n < 2 or not math.isfinite(iv.lo):
            continue
        sign = part.claimed
        judged.append(sign != 0 and effect * sign > 0 and (iv.hi < effect if sign > 0 else iv.lo > effect))
    return bool(judged) and all(judged)


def effect_text(effect: float | Mapping[str, float] | None, outcome: Outcome) -> tuple[str, str]:
    """The paper's effect as shown and where it lies against our interval(s): ('+2.74', 'inside') for one effect,
    ('Dir(0.1): +2.74; Dir(1.0): +3.04', 'Dir(0.1): above; Dir(1.0): inside') for effects per named part."""
    if effect is None:
        return "", ""
    if isinstance(effect, Mapping):
        named = dict(outcome.parts)
        unknown = sorted(set(effect) - set(named))
        if named and not set(effect) & set(named):  # parts that never match: a wrong name, not another profile
            raise ValueError(f"paper effects for parts {unknown}; the claim has parts {sorted(named)}")
        shown = "; ".join(f"{k}: {v:+.2f}" for k, v in effect.items())
        where = "; ".join(f"{k}: {(effect_position(named[k], v) if k in named else '') or '—'}" for k, v in effect.items())
        return shown, where
    return f"{float(effect):+.2f}", effect_position(outcome, float(effect))
