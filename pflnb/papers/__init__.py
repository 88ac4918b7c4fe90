"""One package per paper for what only that paper uses: its declaration, views of its runs, figures, own theory.

Every paper package has the same shape (:mod:`pflnb.experiments.paper`):

* ``paper.py``: the paper's experiments (arms, seeds and config fields per profile), and ``PAPER``, which gathers
  them with ``CLAIMS`` from ``ledger.py`` (which experiment and arms, which rule, the paper's words) and ``COVERAGE``
  from ``coverage.py`` (every numbered table, figure and theorem and the ledger rows that test it), all declared as
  data; ``run_experiment(PAPER, name, profile)`` runs an experiment and ``decide(PAPER, results)`` decides the
  claims;
* ``claims.py``: the rules of its derived claims, each returning an outcome of the one verdict rule of
  :mod:`pflnb.experiments.claims`;
* ``experiments.py``, ``plots.py`` and its own theory: its views of the records, figures and checks.

Shared layers stay shared: :mod:`pflnb.fl`, :mod:`pflnb.algorithms` (one registry), :mod:`pflnb.models`,
:mod:`pflnb.data` and the theory used by several papers (:mod:`pflnb.theory`). Each paper package's docstring
names every registry method, model and shared module the paper uses.
"""

from pflnb.experiments.registry import PAPERS as REGISTRY

PAPERS = tuple(REGISTRY)  # the keys of the one registry of papers (:mod:`pflnb.experiments.registry`)
