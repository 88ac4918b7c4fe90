"""Every method, registered under a short name (``pflnb list`` prints them).

Each module of this package registers its methods with ``@register`` on import; all modules are imported
here, so a new method only needs its own module.
"""

import importlib
import pkgutil

from pflnb.algorithms.registry import REGISTRY, describe_methods, get_algorithm_class, list_methods, make_algorithm, register

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "describe_methods", "get_algorithm_class", "list_methods", "make_algorithm", "register"]
