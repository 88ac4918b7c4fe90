"""One concern per module, each module at most about 600 lines, each paper's declarations (``paper.py``) at most 400.

The modules still above their limit are listed with the size they have now, as a ceiling: they may shrink (then lower
the ceiling, or drop them from the list once under the limit), never grow, and no other module may cross the limit.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pflnb"
LIMIT, PAPER_LIMIT = 600, 400
# module → its size now, until it is split (issue #50)
OVER: dict[str, int] = {}


def sizes() -> dict[str, int]:
    return {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}


def limit(name: str) -> int:
    return PAPER_LIMIT if name.startswith("papers/") and name.endswith("/paper.py") else LIMIT


def test_no_module_grows_past_its_limit_or_its_listed_size():
    over = {n: s for n, s in sizes().items() if s > OVER.get(n, limit(n))}
    assert over == {}, f"split these modules by concern (limit {LIMIT} lines, a paper.py {PAPER_LIMIT}): {over}"


def test_the_list_of_large_modules_is_current():
    now = sizes()
    gone = sorted(n for n in OVER if n not in now)
    under = sorted(n for n in OVER if n in now and now[n] <= limit(n))
    assert gone == [] and under == [], f"drop from OVER: no longer there {gone}, now within the limit {under}"
