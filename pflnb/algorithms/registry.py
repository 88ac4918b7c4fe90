"""One registry of methods: short name → Algorithm class."""

from __future__ import annotations

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
