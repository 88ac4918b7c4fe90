"""One package per paper for what only that paper uses: its settings and runs, figures, own theory and claims.

Every paper package offers the same vocabulary:

* ``settings(profile)``: the sizes of the paper's experiments at a profile (smoke, cpu, paper);
* ``seeds(profile)``: the seeds its runs use at that profile;
* ``METHODS``: label → (registry method, parameters) of the methods it compares;
* ``claims.claims(...)``: its claims, each decided by the one verdict rule of :mod:`pflnb.experiments.claims`.

Shared layers stay shared: :mod:`pflnb.fl`, :mod:`pflnb.algorithms` (one registry), :mod:`pflnb.models`,
:mod:`pflnb.data` and the theory used by several papers (:mod:`pflnb.theory`). Each paper package's docstring
names every registry method, model and shared module the paper uses.
"""

PAPERS = ("lgmix", "fedco2", "fedpg", "pmixfed", "fedfac")
