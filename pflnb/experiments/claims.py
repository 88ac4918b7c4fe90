"""The claims table that ends every paper notebook: claim, paper value, our value, verdict."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

VERDICTS = ("reproduced", "partially reproduced", "not reproduced", "not testable at this scale")


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper and what this reproduction measured."""

    claim: str
    paper: str
    ours: str
    verdict: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def mean_std_str(values: Sequence[float] | np.ndarray, scale: float = 100.0, digits: int = 1) -> str:
    """'mean ± std (n=k)' of ``values`` × ``scale`` (sample std, ddof=1; 0 for a single value)."""
    v = np.asarray(values, dtype=float) * scale
    std = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return f"{v.mean():.{digits}f} ± {std:.{digits}f} (n={v.size})"


def verdict(holds: bool, testable: bool = True, partial: bool = False) -> str:
    """The verdict word for a claim: reproduced / partially reproduced / not reproduced / not testable."""
    if not testable:
        return "not testable at this scale"
    if holds:
        return "partially reproduced" if partial else "reproduced"
    return "not reproduced"


def claims_table(claims: Iterable[Claim]) -> pd.DataFrame:
    """The claims as a DataFrame with columns claim, paper, ours, verdict, note."""
    return pd.DataFrame([asdict(c) for c in claims], columns=["claim", "paper", "ours", "verdict", "note"])
