"""Progress bars that read well both live and in an executed notebook.

Interactively (JupyterLab, a terminal) :func:`tqdm` is ``tqdm.auto``'s bar. In a headless batch run (``pflnb
reproduce`` sets ``PFLNB_PROGRESS_MODE=final`` for its kernels) a bar's redraws would be stored in the executed
notebook as a stream of ``\\r`` lines; there each bar instead prints one line when it finishes ("runs (2 workers):
24/24 in 3m12s"), and a bar created with ``leave=False`` (the engine's per-run round bar) prints nothing.

In a worker process (:class:`~pflnb.experiments.executors.Processes`) a bar cannot draw: under :func:`report_to` each
bar instead keeps its count in a small JSON file, which the parent reads to show the rounds of the runs in flight
(:func:`read_reports`).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm as _tqdm

MODE_ENV = "PFLNB_PROGRESS_MODE"
MODES = ("bars", "final")


def mode() -> str:
    """The progress mode: ``bars`` (live bars, the default) or ``final`` (one line per finished bar)."""
    value = os.environ.get(MODE_ENV, "bars") or "bars"
    if value not in MODES:
        raise ValueError(f"{MODE_ENV} must be one of {MODES}, got {value!r}")
    return value


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{seconds:.1f}s"


class FinalLine:
    """A stand-in for a tqdm bar that counts silently and writes one line to stdout when it closes."""

    def __init__(self, iterable: Iterable[Any] | None = None, total: int | None = None, desc: str = "", leave: bool = True):
        self.iterable, self.desc, self.leave = iterable, desc, leave
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.n, self.postfix = total, 0, ""
        self._start, self._closed = time.perf_counter(), False

    def __iter__(self) -> Iterator[Any]:
        try:
            for item in self.iterable or ():
                yield item
                self.n += 1
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps."""
        self.n += n

    def set_postfix(self, **kw: Any) -> None:
        """Kept for the final line's context (the last postfix is not printed: it names the last item only)."""
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())

    def set_postfix_str(self, text: str = "") -> None:
        """Kept as :meth:`set_postfix` (e.g. the runs in flight; not printed)."""
        self.postfix = text

    def write(self, text: str) -> None:
        """Print ``text`` on its own line (as ``tqdm.write``)."""
        print(text, file=sys.stdout, flush=True)

    def close(self) -> None:
        """Print the one final line (once; nothing for ``leave=False``)."""
        if self._closed:
            return
        self._closed = True
        if self.leave:
            done = f"{self.n}/{self.total}" if self.total is not None else f"{self.n}"
            label = f"{self.desc}: " if self.desc else ""
            print(f"{label}{done} in {_duration(time.perf_counter() - self._start)}", file=sys.stdout, flush=True)

    def __enter__(self) -> FinalLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FileReport(FinalLine):
    """A stand-in for a tqdm bar in a worker process: it counts silently and keeps ``{"desc", "n", "total"}`` in
    ``path`` (written when it opens, then at most every ``every`` seconds), removed when it closes. Over
    ``range(a, b)`` (the engine's rounds, from a resumed round ``a``) it counts from ``a - 1`` to ``b - 1``: the
    round reached, of the run's rounds."""

    def __init__(self, path: Path, every: float, iterable: Iterable[Any] | None = None, total: int | None = None, desc: str = ""):
        super().__init__(iterable, total, desc, leave=False)
        self.path, self.every, self._written = path, every, -float("inf")
        if isinstance(iterable, range) and iterable.step == 1 and iterable.start >= 1 and self.total is not None:
            self.n, self.total = iterable.start - 1, self.total + iterable.start - 1
        self.update(0)  # the report exists from the start: the parent sees the run before its first step ends

    def __iter__(self) -> Iterator[Any]:
        try:
            for item in self.iterable or ():
                yield item
                self.update()
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps; rewrite the report when ``every`` seconds passed since the last. A report that
        cannot be written (its folder gone, a full disk) stops reporting: a display never ends the run it shows."""
        self.n += n
        now = time.monotonic()
        if now - self._written >= self.every:
            self._written = now
            tmp = self.path.with_suffix(".tmp")
            try:
                tmp.write_text(json.dumps({"desc": self.desc, "n": self.n, "total": self.total}))
                os.replace(tmp, self.path)  # a reader never sees half a report
            except OSError:
                self._written = float("inf")

    def close(self) -> None:
        """Remove the report (once)."""
        if not self._closed:
            self._closed = True
            self.path.unlink(missing_ok=True)


_REPORT: tuple[Path, float] | None = None  # where this process's bars report, and how often (report_to)
_BARS = itertools.count()  # numbers this process's report files


@contextmanager
def report_to(path: Path | str, every: float = 5.0) -> Iterator[None]:
    """Within the block, every enabled bar of this process reports its count (:class:`FileReport`) instead of
    drawing, each to a file of its own beside ``path`` (``<stem>-<n>.json``): a worker process's runs seen from the
    parent (:func:`read_reports`)."""
    global _REPORT
    previous, _REPORT = _REPORT, (Path(path), every)
    try:
        yield
    finally:
        _REPORT = previous


def read_reports(folder: Path | str) -> list[dict[str, Any]]:
    """The reports under ``folder`` (one per bar open in a worker), in file order; a report being replaced or just
    removed is skipped."""
    reports = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return reports


def in_flight(reports: list[dict[str, Any]]) -> str:
    """The runs in flight as a bar's postfix: ``fedprox 312/2000, fedprox 1190/2000``."""
    return ", ".join(f"{r['desc']} {r['n']}/{r['total']}" for r in reports)


def tqdm(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    disable: bool = False,
    leave: bool = True,
) -> Any:
    """A progress bar: ``tqdm.auto`` live, one final line in ``final`` mode (see the module docstring), none when
    ``disable``."""
    if not disable and _REPORT is not None:  # a file of its own: bars open at once in one process never collide
        path, every = _REPORT
        return FileReport(path.with_name(f"{path.stem}-{next(_BARS)}.json"), every, iterable=iterable, total=total, desc=desc)
    if not disable and mode() == "final":
        return FinalLine(iterable, total, desc, leave)
    return _tqdm(iterable, total=total, desc=desc, disable=disable, leave=leave)
