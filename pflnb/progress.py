"""Progress bars that read well both live and in an executed notebook.

Interactively (JupyterLab, a terminal) :func:`tqdm` is ``tqdm.auto``'s bar. In a headless batch run (``pflnb
reproduce`` sets ``PFLNB_PROGRESS_MODE=final`` for its kernels) a bar's redraws would be stored in the executed
notebook as a stream of ``\\r`` lines; there each bar instead prints one line when it finishes ("runs (2 workers):
24/24 in 3m12s"), and a bar created with ``leave=False`` (the engine's per-run round bar) prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
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
    if not disable and mode() == "final":
        return FinalLine(iterable, total, desc, leave)
    return _tqdm(iterable, total=total, desc=desc, disable=disable, leave=leave)
