"""``make check-outputs``: are the committed outputs exactly what the code gives?

After a ``make reproduce-all`` (or on an already executed run) the working tree's ``figures/`` and the README's ledger
are compared with a git commit (``HEAD`` by default):

* PNGs by their pixels (a file whose bytes differ but whose decoded image is equal counts as unchanged);
* claims CSVs by their cells, ignoring the ``code`` column (the code version, which names the commit and so
  changes whenever the code does) and the ``kernels`` column; every other file (other CSVs, PDFs) by its bytes;
* the README by the text between its ledger markers;
* timing outputs, whose name starts with ``timing`` (wall-clock tables and figures), and claims decided on wall-clock
  time (``wall_clock`` rows of a claims CSV, and the README ledger when only they moved its counts) are listed when
  they change but not counted: times vary from run to run.

The claims CSVs record the CPU kernels their notebooks ran under (:func:`pflnb.kernels`): when the committed ones were
made under other kernels than the regenerated ones, every number may differ in its last bits, so the report says so
once, instead of listing each file, and fails.

A file regenerated but not committed is *new*; a committed file the run no longer writes is *missing*; both count.
"""

from __future__ import annotations

import csv
import io
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pflnb.experiments import claims as C
from pflnb.experiments.claims import CODE, KERNELS, LEDGER_END, LEDGER_START, TIMING_PREFIX

OUTPUT_DIR = "figures"
README = "README.md"


@dataclass(frozen=True)
class Difference:
    """One output that differs from the commit: its path (relative to the repository), how, and a detail."""

    path: str
    kind: str  # "changed", "new" or "missing"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind:8s} {self.path}" + (f"  ({self.detail})" if self.detail else "")


@dataclass
class OutputsReport:
    """The comparison: counted differences, timing outputs that changed (not counted), and how many files matched."""

    ref: str
    differences: list[Difference] = field(default_factory=list)
    timing: list[Difference] = field(default_factory=list)
    unchanged: int = 0
    kernels: tuple[str, str] | None = None  # (committed, regenerated) CPU kernels when they differ

    @property
    def ok(self) -> bool:
        """True when every counted output equals the commit's (and both were made under the same CPU kernels)."""
        return not self.differences and self.kernels is None

    def text(self) -> str:
        """The report as printed by ``pflnb check-outputs``."""
        if self.kernels is not None:
            old, new = self.kernels
            return (
                f"compared the outputs with {self.ref}: the committed outputs were made under CPU kernels "
                f"{old or 'not recorded (before they were pinned)'}, these under {new}, so their numbers may differ in "
                f"every last bit ({len(self.differences)} outputs differ; not listed). Regenerate the committed outputs "
                "under one setting (make reproduce-all, then commit), or reproduce under theirs (PFLNB_KERNELS, see the "
                "determinism guide)."
            )
        lines = [f"compared the outputs with {self.ref}: {self.unchanged} unchanged, {len(self.differences)} differ"]
        lines += [f"  {d}" for d in self.differences]
        if self.timing:
            lines.append(f"timing outputs that changed (wall-clock, not counted): {len(self.timing)}")
            lines += [f"  {d}" for d in self.timing]
        lines.append(
            "outputs match the code"
            if self.ok
            else "outputs differ from the commit: commit the regenerated files if the change is intended"
        )
        return "\n".join(lines)


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True, timeout=60).stdout


def committed_files(root: Path, ref: str = "HEAD", folder: str = OUTPUT_DIR) -> list[str]:
    """Paths of the files under ``folder`` in commit ``ref``."""
    out = _git(root, "ls-tree", "-r", "--name-only", ref, "--", folder).decode()
    return [p for p in out.splitlines() if p]


def _committed(root: Path, ref: str, path: str) -> bytes:
    return _git(root, "show", f"{ref}:{path}")


def same_pixels(a: bytes, b: bytes) -> bool:
    """True when two PNG files decode to the same size, mode and pixels (metadata and compression ignored)."""
    from PIL import Image

    with Image.open(io.BytesIO(a)) as ia, Image.open(io.BytesIO(b)) as ib:
        if ia.size != ib.size:
            return False
        return bool(np.array_equal(np.asarray(ia.convert("RGBA")), np.asarray(ib.convert("RGBA"))))


def _claims_cells(data: bytes) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if name not in (CODE, KERNELS)]
    return [[r[i] for i in keep if i < len(r)] for r in rows]


def _split_wall_clock(cells: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
    """(the header and every row not decided on wall-clock time, the wall-clock rows)."""
    if not cells or "wall_clock" not in cells[0]:
        return cells, []
    i = cells[0].index("wall_clock")
    timed = [r for r in cells[1:] if i < len(r) and r[i] == "yes"]
    return [cells[0], *(r for r in cells[1:] if not (i < len(r) and r[i] == "yes"))], timed


def claims_change(a: bytes, b: bytes) -> str:
    """How two claims CSVs differ, the ``code`` and ``kernels`` columns aside: 'same', 'wall-clock' (only rows decided
    on wall-clock time) or 'changed'."""
    old, new = _claims_cells(a), _claims_cells(b)
    if old == new:
        return "same"
    (old_kept, _), (new_kept, _) = _split_wall_clock(old), _split_wall_clock(new)
    return "wall-clock" if old_kept == new_kept and len(old) == len(new) else "changed"


def same_claims(a: bytes, b: bytes) -> bool:
    """True when two claims CSVs hold the same cells, the ``code`` and ``kernels`` columns aside."""
    return claims_change(a, b) == "same"


def ledger_section(readme: str) -> str:
    """The README's text between the ledger markers ('' when it has none)."""
    if LEDGER_START not in readme or LEDGER_END not in readme:
        return ""
    return readme.split(LEDGER_START, 1)[1].split(LEDGER_END, 1)[0]


def is_timing(path: str) -> bool:
    """True for a timing output (file name starting with 'timing'): listed when it changes, never counted."""
    return Path(path).name.startswith(TIMING_PREFIX)


def _same(path: str, old: bytes, new: bytes) -> bool:
    if old == new:
        return True
    if path.endswith(".png"):
        return same_pixels(old, new)
    if Path(path).name == "claims.csv":
        return same_claims(old, new)
    return False


def _kernels(data: bytes) -> set[str]:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    if not rows or KERNELS not in rows[0]:
        return {""}
    i = rows[0].index(KERNELS)
    return {r[i] for r in rows[1:] if i < len(r)}


def _ledger_with_committed_wall_clock(root: Path, ref: str) -> str:
    """The README ledger section the regenerated claims give when every wall-clock row keeps its committed verdict."""
    tables = []
    for key, name in C.PAPERS.items():
        path = root / OUTPUT_DIR / key / "claims.csv"
        if not path.exists():
            continue
        new, _ = C.read_claims(path)
        try:
            old = C.read_claims(io.BytesIO(_committed(root, ref, f"{OUTPUT_DIR}/{key}/claims.csv")))[0]
        except subprocess.CalledProcessError:
            old = new.iloc[0:0]
        kept = dict(zip(old.claim, zip(old.category, old.verdict)))
        for i in new.index[new.wall_clock == "yes"]:
            if new.at[i, "claim"] in kept:
                new.at[i, "category"], new.at[i, "verdict"] = kept[new.at[i, "claim"]]
        tables.append(new.assign(paper=name))
    return "\n" + C.readme_ledger_text(pd.concat(tables, ignore_index=True)) + "\n" if tables else ""


def compare_outputs(root: str | Path | None = None, ref: str = "HEAD") -> OutputsReport:
    """Compare the working tree's ``figures/`` and README ledger with commit ``ref`` (see the module docstring)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    report = OutputsReport(ref)
    committed = set(committed_files(root, ref))
    listed = _git(root, "ls-files", "--cached", "--others", "--exclude-standard", "--", OUTPUT_DIR).decode()
    current = {p for p in listed.splitlines() if p and (root / p).is_file()}  # git-ignored files are not outputs
    old_kernels: set[str] = set()
    new_kernels: set[str] = set()
    for path in sorted(committed | current):
        if path not in current:
            diff = Difference(path, "missing", "committed but not regenerated")
        elif path not in committed:
            diff = Difference(path, "new", "regenerated but not committed")
        else:
            old, new = _committed(root, ref, path), (root / path).read_bytes()
            if Path(path).name == "claims.csv":
                old_kernels |= _kernels(old)
                new_kernels |= _kernels(new)
                change = claims_change(old, new)
                if change == "same":
                    report.unchanged += 1
                    continue
                diff = Difference(path, "changed", "wall-clock claims" if change == "wall-clock" else "contents")
                (report.timing if change == "wall-clock" else report.differences).append(diff)
                continue
            if _same(path, old, new):
                report.unchanged += 1
                continue
            diff = Difference(path, "changed", "pixels" if path.endswith(".png") else "contents")
        (report.timing if is_timing(path) else report.differences).append(diff)
    old = ledger_section(_committed(root, ref, README).decode("utf-8"))
    new = ledger_section((root / README).read_text(encoding="utf-8"))
    if old == new:
        report.unchanged += 1
    elif old == _ledger_with_committed_wall_clock(root, ref):
        report.timing.append(Difference(README, "changed", "the claims ledger, by wall-clock claims only"))
    else:
        report.differences.append(Difference(README, "changed", "the claims ledger"))
    if old_kernels and new_kernels and old_kernels != new_kernels:
        report.kernels = (", ".join(sorted(old_kernels)), ", ".join(sorted(new_kernels)))
    return report
