"""Every notebook's parameters, validated as the command line validates its options.

A notebook's first code cell after its ``parameters`` cell calls :func:`notebook_parameters` with every parameter
by name and gets them back, in the same order, parsed and checked::

    profile, seeds, device, data_root, progress = notebook_parameters(
        profile=profile, seeds=seeds, device=device, data_root=data_root, progress=progress
    )

Values come in the forms papermill passes: Python values (``-y`` YAML, ``-p`` numbers), or strings (``-p seeds
"[0, 1]"``, ``-p seeds "0 1"``, ``-p progress 0``, ``-p data_root None``). A bad value raises one ValueError naming
the parameter, what it got and what is allowed, before any work starts; a name the table below does not know is an
error too (a misspelt parameter would otherwise be ignored).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pflnb.algorithms import list_methods
from pflnb.data import DATASETS
from pflnb.experiments.config import PROFILES, _check_device


def _literal(value: Any) -> Any:
    """A string as the Python/JSON literal it spells ('[0, 1]', '3', 'None', 'true'), else unchanged."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    lowered = {"none": None, "null": None, "true": True, "false": False}
    if text.lower() in lowered:
        return lowered[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return value


def _int(name: str, value: Any, minimum: int | None = None) -> int:
    v = _literal(value)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def _bool(name: str, value: Any) -> bool:
    v = _literal(value)
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ValueError(f"{name} must be True or False (or 1 / 0), got {value!r}")


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def inner(name: str, value: Any) -> Any:
        return None if _literal(value) is None else check(name, value)

    return inner


def _list(name: str, value: Any) -> list[Any]:
    """A list from a list/tuple, a literal string ('[0, 1]'), a space- or comma-separated string ('0 1') or one item."""
    v = _literal(value)
    if isinstance(v, str):
        parts = [p for p in v.replace(",", " ").split() if p]
        v = [_literal(p) for p in parts]
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v]


def _distinct(name: str, items: list[Any]) -> list[Any]:
    if not items:
        raise ValueError(f"{name} needs at least one value")
    repeated = sorted({repr(x) for x in items if items.count(x) > 1})
    if repeated:
        raise ValueError(f"{name} repeats {', '.join(repeated)}; each would run (and count) twice")
    return items


def check_seeds(name: str, value: Any) -> list[int]:
    """Seeds: distinct integers >= 0."""
    return _distinct(name, [_int(f"{name} (each seed)", s, 0) for s in _list(name, value)])


def check_profile(name: str, value: Any) -> str:
    """One of :data:`PROFILES`."""
    if value not in PROFILES:
        raise ValueError(f"{name} must be one of {PROFILES}, got {value!r}")
    return value


def check_device(name: str, value: Any) -> str:
    """'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', available on this machine (the config's check)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string such as 'auto', 'cpu' or 'cuda', got {value!r}")
    _check_device(value)
    return value


def check_folder(name: str, value: Any) -> str:
    """An existing folder."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be None or a folder path (string), got {value!r}")
    if not Path(value).expanduser().is_dir():
        raise ValueError(f"{name} {value!r} is not an existing folder")
    return value


def check_dataset(name: str, value: Any) -> str:
    """A registered dataset name (``pflnb list``)."""
    if value not in DATASETS:
        raise ValueError(f"{name}: unknown dataset {value!r}; choose one of {sorted(DATASETS)}")
    return value


def check_methods(name: str, value: Any) -> list[str]:
    """Registered method names, each once."""
    items = [str(m) for m in _list(name, value)]
    unknown = [m for m in items if m not in list_methods()]
    if unknown:
        raise ValueError(f"{name}: unknown method(s) {unknown}; choose from {list_methods()}")
    return _distinct(name, items)


def _nonnegative_float(name: str, value: Any) -> float:
    v = _literal(value)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(v)


# Every parameter a notebook declares, with its check (None stays None where the notebook allows it).
PARAMETERS: dict[str, Callable[[str, Any], Any]] = {
    "profile": check_profile,
    "seeds": _optional(check_seeds),
    "device": check_device,
    "data_root": _optional(check_folder),
    "progress": _bool,
    "threads": lambda n, v: _int(n, v, 1),
    "paper_dataset": check_dataset,
    "dataset": check_dataset,
    "methods": _optional(check_methods),
    "run_mobilenet": _bool,
    "extended": _bool,
    "fine_ablations": _optional(_bool),
    "identity_tol": _optional(_nonnegative_float),
}


def notebook_parameters(**values: Any) -> tuple[Any, ...]:
    """The notebook's parameters, each parsed and checked (:data:`PARAMETERS`), returned in the order given."""
    unknown = sorted(set(values) - set(PARAMETERS))
    if unknown:
        raise ValueError(f"unknown notebook parameter(s) {unknown}; known: {sorted(PARAMETERS)}")
    return tuple(PARAMETERS[name](name, value) for name, value in values.items())
