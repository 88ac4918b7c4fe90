"""The one results cache: where records live, how they are written (atomically) and read back, and its log.

Every cached computation of the package (an engine run, FedPG's P-model scores, a FedFac simulation, ...) is a
:class:`~pflnb.experiments.jobs.Job`; its record is one file ``<root>/<profile>/<label>-<key>.json`` (or ``.pt`` for
tensors) under :func:`results_root`. This module knows files only: it imports nothing else of the package's
experiment layer.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pflnb.fl.engine import to_jsonable


def results_root() -> Path:
    """Folder of cached results: ``$PFLNB_RESULTS`` or ``results/`` at the repository root."""
    env = os.environ.get("PFLNB_RESULTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return repo / "results" if (repo / "pyproject.toml").exists() else Path.cwd() / "results"


class RecordNotCachedWarning(UserWarning):
    """A finished job's record could not be written to the results cache (disk full, permissions, a vanished
    folder): the record is returned (with ``not_cached`` naming the path and the reason) but must be computed again."""


def check_results_root(folder: Path | str) -> Path:
    """``folder`` (created if missing) when it is a directory this process can write a file into; else a ValueError
    naming it and the OS's reason, raised before any computation starts."""
    folder = Path(folder)
    fix = "choose another folder with $PFLNB_RESULTS (or root=...), or free space / fix the permissions"
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"results folder {folder} is not a directory; {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe.", suffix=".tmp")
        try:
            os.write(fd, b"{}")
            os.fsync(fd)
        finally:
            os.close(fd)
            remove(probe)
    except OSError as err:
        raise ValueError(f"results folder {folder} is not writable ({err.strerror or err}); {fix}") from None
    return folder


def not_cached_reason(path: Path, err: OSError) -> str:
    """One line for a record that could not be written: the path, the OS's reason, and that it was not cached."""
    return f"could not write {path} ({err.strerror or err}): the record was not cached"


def report_not_cached(done: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """The records of a sweep that were not cached, from ``(job description, record)`` pairs; when there are any,
    one warning at the end lists them all."""
    lost = [(about, r) for about, r in done if r.get("not_cached")]
    if lost:
        lines = "\n".join(f"  {a['method']} seed {a['seed']}: {r['not_cached']}" for a, r in lost)
        text = f"{len(lost)} finished job(s) were not cached and must be computed again:\n{lines}"
        warnings.warn(text, RecordNotCachedWarning, stacklevel=3)
    return [r for _, r in lost]


class RecordSetAsideWarning(UserWarning):
    """Cached records that could not be used (truncated, malformed, made under other CPU kernels) were moved aside
    and recomputed."""


@dataclass(frozen=True)
class SetAside:
    """A cached record moved aside: where it was, where it is now, why, and the job it belonged to."""

    path: Path
    moved: Path
    reason: str
    about: dict[str, Any]


SET_ASIDE = ".set-aside"  # the suffix of a record moved aside; records never end in it, so nothing reads it back


def move_aside(path: Path | str) -> Path:
    """Move the cached record ``path`` to ``<name>.<UTC time>[.<n>].set-aside`` in the same folder (kept for
    inspection, never deleted; no job reads it) and return the new path."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = path.with_name(f"{path.name}.{stamp}{SET_ASIDE}"), 1
    while target.exists():
        target, n = path.with_name(f"{path.name}.{stamp}.{n}{SET_ASIDE}"), n + 1
    os.replace(path, target)
    return target


def report_set_aside(moved: Iterable[SetAside]) -> None:
    """One warning at the end of a sweep listing every record moved aside and recomputed (nothing when none was)."""
    moved = list(moved)
    if moved:
        lines = "\n".join(f"  {m.about['method']} seed {m.about['seed']}: {m.path} -> {m.moved} ({m.reason})" for m in moved)
        text = f"{len(moved)} cached record(s) could not be used; each was moved aside (kept) and recomputed:\n{lines}"
        warnings.warn(text, RecordSetAsideWarning, stacklevel=3)


RUN_LOG_ENV = "PFLNB_RUN_LOG"  # a file to which every job appends one JSON line (pflnb reproduce's log reads it)


def log_event(event: str, about: dict[str, Any], **extra: Any) -> None:
    """Append ``{"event", **about, ...}`` to ``$PFLNB_RUN_LOG`` when it is set: ``loaded`` (from the cache),
    ``computed`` (``not_cached`` when its record could not be written) or ``failed``. ``about`` is a job's
    :meth:`~pflnb.experiments.jobs.Job.describe` (method, seed, key, profile)."""
    target = os.environ.get(RUN_LOG_ENV)
    if not target:
        return
    with contextlib.suppress(OSError), open(target, "a") as f:  # a log line must never cost a result
        f.write(json.dumps({"event": event, **about, **extra}) + "\n")


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def strict_json(x: Any) -> Any:
    """``x`` as plain JSON values with every non-finite float written as the string "NaN", "Infinity" or
    "-Infinity" (valid JSON for strict parsers; :func:`read_json` reads them back as floats)."""
    x = to_jsonable(x)
    if isinstance(x, float):
        return x if math.isfinite(x) else ("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity"))
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [strict_json(v) for v in x]
    return x


def decode_nonfinite(x: Any) -> Any:
    """The inverse of :func:`strict_json`'s strings for non-finite floats (a record's ``config`` is left as it is)."""
    if isinstance(x, str):
        return _NONFINITE.get(x, x)
    if isinstance(x, dict):
        return {k: (v if k == "config" else decode_nonfinite(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [decode_nonfinite(v) for v in x]
    return x


def write_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a unique temporary file in the same folder and an atomic replace:
    concurrent writers never collide, and readers see the old or the new file, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise


def write_json_atomic(path: Path | str, obj: Any) -> None:
    """``obj`` as strict JSON (:func:`strict_json`), written atomically (:func:`write_atomic`)."""
    write_atomic(path, json.dumps(strict_json(obj), allow_nan=False).encode())


def write_torch_atomic(path: Path | str, obj: Any) -> None:
    """``obj`` (tensors and containers) in torch's format, written atomically (:func:`write_atomic`)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_atomic(path, buffer.getvalue())


def read_json(path: Path | str) -> Any:
    """A JSON file written by :func:`write_json_atomic`, with "NaN"/"Infinity" strings read back as floats; a file
    that is not JSON raises ValueError naming it and what to do."""
    try:
        with open(path) as f:
            return decode_nonfinite(json.load(f))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        fix = "delete it or re-run with --force (force=True)"
        raise ValueError(f"cached record {path} is truncated or not JSON ({e}); {fix}") from e


def read_torch(path: Path | str) -> Any:
    """A file written by :func:`write_torch_atomic`, loaded onto the CPU."""
    return torch.load(path, map_location="cpu", weights_only=False)


def remove(path: Path | str) -> None:
    """Delete ``path`` if it exists (another process may have removed it first)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
