"""Every method, registered under a short name (``pflnb list`` prints them)."""

from pflnb.algorithms import fedmgda, meta, moon, partial, personal  # noqa: F401  (registration)
from pflnb.algorithms.registry import REGISTRY, get_algorithm_class, list_methods, make_algorithm, register

__all__ = ["REGISTRY", "get_algorithm_class", "list_methods", "make_algorithm", "register"]
