"""``make check-outputs``: are the committed outputs exactly what the code gives?

After a ``make reproduce-all`` (or on an already executed run) the working tree's ``figures/`` and the README's ledger
are compared with a git commit (``HEAD`` by default):

* PNGs by their pixels (a file whose bytes differ but whose decoded image is equal counts as unchanged);
* claims CSVs by their cells, ignoring the ``code`` column (the code version, which names the commit and so
  changes whenever the code does); every other file (other CSVs, PDFs) by its bytes;
* the README by the text between its ledger markers;
* timing outputs, whose name starts with ``timing`` (wall-clock tables and figures), are listed when they change
  but not counted: times vary from run to run.

A file regenerated but not committed is *new*; a committed file the run no longer writes is *missing*; both count.
"""

from __future__ import annotations

import csv
import io
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pflnb.experiments.claims import CODE, LEDGER_END, LEDGER_START, TIMING_PREFIX

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

    @property
    def ok(self) -> bool:
        """True when every counted output equals the commit's."""
        return not self.differences

    def text(self) -> str:
        """The report as printed by ``pflnb check-outputs``."""
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
    keep = [i for i, name in enumerate(rows[0]) if name != CODE]
    return [[r[i] for i in keep if i < len(r)] for r in rows]


def same_claims(a: bytes, b: bytes) -> bool:
    """True when two claims CSVs hold the same cells, the ``code`` column aside."""
    return _claims_cells(a) == _claims_cells(b)


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


def compare_outputs(root: str | Path | None = None, ref: str = "HEAD") -> OutputsReport:
    """Compare the working tree's ``figures/`` and README ledger with commit ``ref`` (see the module docstring)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    report = OutputsReport(ref)
    committed = set(committed_files(root, ref))
    listed = _git(root, "ls-files", "--cached", "--others", "--exclude-standard", "--", OUTPUT_DIR).decode()
    current = {p for p in listed.splitlines() if p and (root / p).is_file()}  # git-ignored files are not outputs
    for path in sorted(committed | current):
        if path not in current:
            diff = Difference(path, "missing", "committed but not regenerated")
        elif path not in committed:
            diff = Difference(path, "new", "regenerated but not committed")
        elif _same(path, _committed(root, ref, path), (root / path).read_bytes()):
            report.unchanged += 1
            continue
        else:
            diff = Difference(path, "changed", "pixels" if path.endswith(".png") else "contents")
        (report.timing if is_timing(path) else report.differences).append(diff)
    old = ledger_section(_committed(root, ref, README).decode("utf-8"))
    new = ledger_section((root / README).read_text(encoding="utf-8"))
    if old == new:
        report.unchanged += 1
    else:
        report.differences.append(Difference(README, "changed", "the claims ledger"))
    return report
