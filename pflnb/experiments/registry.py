"""The one registry of the reproduced papers: key (the package under :mod:`pflnb.papers`, the folder under
``figures/``, the notebook's short name) → the name the ledger and the site show. Every command reads it (``pflnb
tuning``, ``pflnb claims``, ``robustness``, ``check-outputs``, the site); a new paper is added here once, in the
order its notebook runs, and a test fails while a paper package is missing from it.
"""

from __future__ import annotations

PAPERS: dict[str, str] = {
    "lgmix": "LG-Mix",
    "fedco2": "Fed-CO2",
    "fedpg": "FedPG",
    "pmixfed": "pMixFed",
    "fedfac": "FedSplit/FedFac",
}
