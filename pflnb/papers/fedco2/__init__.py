"""Fed-CO2 (Cai, Shi, Huang, Wang; NeurIPS 2023): everything notebook ``02_fedco2`` uses, in one place.

This package:

* :mod:`.experiments` — per-profile settings and seeds, config builders of every experiment (feature skew, label
  skew, label + feature skew, ablations, Fig. 7, number of clients), the tables of Fed-CO2's online / offline /
  fused models, the structural identity check (no transfer: online = FedBN, offline = Local) and the paper's
  reported numbers;
* :mod:`.plots` — its figures (on :mod:`pflnb.plots`' style);
* :mod:`.ntk_co2` — its theory: NTK Gram matrices of the online, offline and cooperative two-layer nets
  (Theorem 4.3), finite-width kernels, gradient descent and rate bounds;
* :mod:`.claims` — its claims under the one verdict rule of :mod:`pflnb.experiments.claims`.

Registry methods (:mod:`pflnb.algorithms`): ``fedco2`` (Algorithm 1, :class:`pflnb.algorithms.fedco2.FedCO2`),
``fedco2-label`` (Algorithm 2), ``fedbn-affine`` (FedBN with only the BN affine parameters personal, the
label-skew code's rule), and the baselines ``fedavg``, ``fedprox``, ``fedbn``, ``fedper``, ``fedrep``, ``ditto``,
``apfl``, ``moon``, ``local``. Models (:mod:`pflnb.models.fedco2`): ``co2-cnn`` (cpu/smoke), ``co2-digit``,
``co2-alexnet`` and ``co2-cnnb`` (paper). Data (:mod:`pflnb.data`): ``digits5-lite``, ``fmnist`` (label skew),
and at the paper profile ``digits5``, ``office-caltech10``, ``domainnet10``, ``cifar10``. Shared modules:
:mod:`pflnb.fl` (engine, state algebra, training), :mod:`pflnb.experiments` (configs, ``run_many``, tables,
the verdict rule), :mod:`pflnb.plots`.
"""

from pflnb.papers.fedco2.experiments import METHODS, settings
from pflnb.papers.fedco2.experiments import seeds as seeds

__all__ = ["METHODS", "settings", "seeds"]
