"""The papers' own words: finding a claim's quote and its quoted numbers in the paper's text.

The papers' texts are not ours to redistribute, so they are not in the repository: they are read from the folder
``$PFLNB_PAPERS`` (default ``../shared/papers/`` beside the repository), one ``<paper>.txt`` per paper, extracted from
the PDF (tables as flattened lines). The tests that use them skip, saying why, where the folder is absent.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PAPERS_ENV = "PFLNB_PAPERS"


def papers_dir() -> Path:
    """The folder of the papers' texts: ``$PFLNB_PAPERS``, else ``../shared/papers`` beside the repository."""
    env = os.environ.get(PAPERS_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "papers"


def normalise(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space (PDF extraction breaks lines anywhere)."""
    return " ".join(text.split())


def paper_text(paper: str, folder: Path | None = None) -> str:
    """The whitespace-normalised text of ``paper`` (its folder name, e.g. ``fedfac``)."""
    path = (folder or papers_dir()) / f"{paper}.txt"
    return normalise(path.read_text(encoding="utf-8", errors="replace"))


def quote_found(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text`` once whitespace is normalised in both."""
    return normalise(quote) in text


_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)")


def numbers(text: str) -> list[str]:
    """The numbers written in ``text`` as they are written ('.8307', '83.07', '−2.5', '1,000'), skipping digits glued to
    letters (CIFAR-10's '10' is read, 'ResNet18' is not)."""
    return [m.group(0) for m in _NUMBER.finditer(text)]


def _value(token: str) -> tuple[float, int]:
    """A number token as (value, decimals written)."""
    t = token.replace("−", "-").replace(",", "").lstrip("+")
    decimals = len(t.split(".")[1]) if "." in t else 0
    return float(t), decimals


def number_found(token: str, text_numbers: set[float]) -> bool:
    """Whether the number ``token`` (from a claim's ``paper`` cell) is one the paper writes, in the paper's own formats:
    the same value, or the value as a fraction or in percent (.8307 ↔ 83.07 ↔ 0.8307), of either sign. A rounded or
    derived number (a difference of two table values) is not the paper's: quote the values, put the difference in the
    claim's ``effect``."""
    value, _ = _value(token)
    return any(abs(form - value) < 1e-9 for t in text_numbers for form in (t, 100 * t, t / 100, -t))


def text_numbers(text: str) -> set[float]:
    """Every number the paper's text writes, as values."""
    return {_value(t)[0] for t in numbers(text)}


def unfound_numbers(cell: str, text: str) -> list[str]:
    """The numbers of a claim's ``paper`` cell that the paper's ``text`` does not write (:func:`number_found`)."""
    found = text_numbers(text)
    return [t for t in numbers(cell) if not number_found(t, found)]
