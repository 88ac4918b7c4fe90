"""Each setting declared once: a field's allowed values travel with its declaration, and a config made of several parts
takes their fields as the parts declare them.

A setting is declared in the layer that uses it: the data fields in :class:`~pflnb.data.DataSpec`, the local
optimizer's in :class:`~pflnb.fl.training.OptimConfig`, the round schedule's in :class:`~pflnb.fl.engine.Schedule`.
Its check is declared with it (:func:`integer`, :func:`real`, :func:`flag`, :func:`choice`) and run by
:func:`check_fields`. :func:`including` composes a config of its parts' fields (types, defaults, checks): the run's
:class:`~pflnb.experiments.config.ExperimentConfig` is DataSpec's, OptimConfig's and Schedule's fields and a few of
its own, so a new setting is one line in the part it belongs to.

This module imports nothing from pflnb: every layer may use it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass
from typing import Any

CHECK = "pflnb.check"  # the metadata key of a field's check


@dataclass(frozen=True)
class Check:
    """What values a field takes: ``kind`` int (≥ ``low``), float (finite, in the interval), bool, or one of
    ``choices``; ``optional``: None is allowed too."""

    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    optional: bool = False
    choices: tuple[str, ...] = ()

    def __call__(self, name: str, value: object) -> None:
        """Raise ValueError naming ``name`` when ``value`` is not allowed."""
        if value is None and self.optional:
            return
        if self.kind == "int":
            if not is_int(value) or (self.low is not None and value < self.low):  # type: ignore[operator]
                what = "None or an integer" if self.optional else "an integer"
                raise ValueError(f"{name} must be {what} >= {self.low:g}, got {value!r} ({type(value).__name__})")
            if self.high is not None and value > self.high:  # type: ignore[operator]
                raise ValueError(f"{name} must be an integer in [{self.low:g}, {self.high:.0f}], got {value!r}")
        elif self.kind == "float":
            if not is_real(value) or not math.isfinite(value):  # type: ignore[arg-type]
                raise ValueError(f"{name} must be a finite number, got {value!r} ({type(value).__name__})")
            low = -math.inf if self.low is None else self.low
            high = math.inf if self.high is None else self.high
            low_open, high_open = self.low_open or self.low is None, self.high_open or self.high is None
            ok_low = value > low if low_open else value >= low  # type: ignore[operator]
            ok_high = value < high if high_open else value <= high  # type: ignore[operator]
            if not (ok_low and ok_high):
                interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
                raise ValueError(f"{name} must be in {interval}, got {value!r}")
        elif self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be True or False, got {value!r}")
        elif self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"{name} must be one of {self.choices}, got {value!r}")
        else:
            raise ValueError(f"unknown check kind {self.kind!r}")


def is_int(v: object) -> bool:
    """An integer that is not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_real(v: object) -> bool:
    """An int or a float that is not a bool."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def _field(default: Any, check: Check, doc: str) -> Any:
    return dataclasses.field(default=default, metadata={CHECK: check, "doc": doc})


def integer(default: int | None, low: int, high: int | None = None, *, optional: bool = False, doc: str = "") -> Any:
    """A field of integers ≥ ``low`` (and ≤ ``high``; None too with ``optional``)."""
    return _field(default, Check("int", low=low, high=high, optional=optional), doc)


def real(
    default: float, low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False,
    doc: str = "",
) -> Any:  # fmt: skip
    """A field of finite numbers in the interval from ``low`` to ``high`` (open at an end with ``low_open`` /
    ``high_open``; no bound where None)."""
    return _field(default, Check("float", low, high, low_open, high_open), doc)


def flag(default: bool, doc: str = "") -> Any:
    """A field of True or False."""
    return _field(default, Check("bool"), doc)


def choice(default: str | None, choices: Sequence[str], doc: str = "", factory: Callable[[], str] | None = None) -> Any:
    """A field whose value is one of ``choices`` (its default made by ``factory`` when given)."""
    check = Check("choice", choices=tuple(choices))
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={CHECK: check, "doc": doc})
    return _field(default, check, doc)


def check_fields(obj: object) -> None:
    """Check every field of the dataclass instance ``obj`` that declares its values (ValueError naming the first
    field that fails, in declaration order)."""
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        check = f.metadata.get(CHECK)
        if check is not None:
            check(f.name, getattr(obj, f.name))


def including(*parts: type) -> Callable[[type], type]:
    """A class decorator, applied under ``@dataclass``: the class gets the fields of the dataclasses ``parts`` as they
    declare them (type, default, check), in the parts' order, before its own. A name declared twice raises TypeError."""

    def add(cls: type) -> type:
        own = dict(cls.__dict__.get("__annotations__", {}))
        taken: dict[str, str] = {}
        annotations: dict[str, Any] = {}
        for part in parts:
            for f in dataclasses.fields(part):
                if f.name in own or f.name in taken:
                    where = cls.__name__ if f.name in own else taken[f.name]
                    raise TypeError(f"{cls.__name__}: field {f.name!r} of {part.__name__} is declared in {where} too")
                taken[f.name] = part.__name__
                annotations[f.name] = f.type
                setattr(cls, f.name, _copy(f))
        cls.__annotations__ = {**annotations, **own}
        return cls

    return add


def part_of(obj: object, part: type, **changes: Any) -> Any:
    """The ``part`` (a dataclass whose fields ``obj`` includes) holding ``obj``'s values of its fields, with ``changes``."""
    return part(**{**{f.name: getattr(obj, f.name) for f in dataclasses.fields(part) if f.init}, **changes})


def _copy(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return dataclasses.field(default=f.default, metadata=f.metadata, repr=f.repr, compare=f.compare)
    if f.default_factory is not MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata=f.metadata, repr=f.repr, compare=f.compare)
    return dataclasses.field(metadata=f.metadata, repr=f.repr, compare=f.compare)
