"""One registry of methods: short name → Algorithm class.

A method with its own update rule is a class (``@register``); a method that differs from another only in its
default parameters is a row, :func:`variant` (name, base method, parameters, description), so the registry
reads as a table.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any

from pflnb.fl.algorithm import Algorithm

REGISTRY: dict[str, type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator: register an algorithm under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"method name {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def variant(name: str, base: type[Algorithm], doc: str, *, personalized: bool | None = None, **defaults: Any) -> type:
    """Register method ``name``: ``base`` with other default parameters ``defaults`` (validated against
    ``base.Params``), described by ``doc``, which starts with the method's name ("FedBN (Li et al. 2021): …"; the
    class is named after it, LG-FedAvg → ``LGFedAvg``); ``personalized`` overrides the base's flag. Returns the
    class, for the calling module to bind to that name; nothing else is written beside the row."""
    fields = {f.name: f for f in dataclasses.fields(base.Params)}
    unknown = set(defaults) - set(fields)
    if unknown:
        raise ValueError(f"variant {name!r}: {base.__name__} has no parameter(s) {sorted(unknown)}; it has {sorted(fields)}")
    module = sys._getframe(1).f_globals.get("__name__", base.__module__)
    title = re.split(r"[\s:(]", doc.strip(), maxsplit=1)[0].replace("-", "")  # "LG-FedAvg (Liang …" → LGFedAvg
    title = title[:1].upper() + title[1:]
    if not title.isidentifier():
        raise ValueError(f"variant {name!r}: its description must start with the method's name, got {doc[:40]!r}")
    params = dataclasses.make_dataclass(
        f"{title}Params",
        [(k, fields[k].type, dataclasses.field(default=v)) for k, v in defaults.items()],
        bases=(base.Params,),
        frozen=True,
        namespace={"__doc__": doc, "__module__": module},
    )
    attrs: dict[str, Any] = {"name": name, "Params": params, "__doc__": doc, "__module__": module}
    if personalized is not None:
        attrs["personalized"] = personalized
    cls = type(title, (base,), attrs)
    cls.Params()  # the defaults must build (and validate, where the Params can)
    if hasattr(cls.Params, "validate"):
        cls.Params().validate()
    return register(cls)


def get_algorithm_class(name: str) -> type[Algorithm]:
    """The class registered as ``name`` (clear error listing the known methods)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown method {name!r}; choose one of {sorted(REGISTRY)}")
    return REGISTRY[name]


def make_algorithm(name: str, params: dict[str, Any] | None = None) -> Algorithm:
    """Instantiate method ``name`` with hyperparameters ``params`` (validated against its Params)."""
    return get_algorithm_class(name).from_dict(params)


def list_methods() -> list[str]:
    """Names of all registered methods."""
    return sorted(REGISTRY)


def describe_methods(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Name, one-line description and default hyperparameters of each method (all when ``names`` is None)."""
    import dataclasses

    rows = []
    for name in names or list_methods():
        cls = get_algorithm_class(name)
        params = {f.name: f.default for f in dataclasses.fields(cls.Params)}
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        rows.append({"method": name, "description": doc, "params": params})
    return rows
