"""Fed-CO2 (Cai, Shi, Huang, Wang; NeurIPS 2023): cooperation of online and offline models.

Everything of this paper, in one place (notebook ``notebooks/02_fedco2.ipynb``):

* registry methods (:mod:`pflnb.algorithms`) — the method: ``fedco2`` (Algorithm 1,
  :class:`pflnb.algorithms.fedco2.FedCO2`), ``fedco2-label`` (Algorithm 2); ``fedbn-affine`` (FedBN with only the
  BN affine parameters personal, the label-skew code's rule); baselines: ``fedavg``, ``fedprox``, ``fedbn``,
  ``fedper``, ``fedrep``, ``ditto``, ``apfl``, ``moon``, ``fedrod``, ``copa`` (:mod:`pflnb.algorithms.copa`), ``local``;
* models (:mod:`pflnb.models.fedco2`) — ``co2-cnn`` (smoke, cpu), ``co2-digit``, ``co2-alexnet`` and ``co2-cnnb``
  (paper);
* data (:mod:`pflnb.data`) — ``digits5-lite``, ``fmnist`` (label skew), and at the paper profile ``digits5``,
  ``office-caltech10``, ``domainnet10``, ``cifar10``;
* shared modules — :mod:`pflnb.fl` (engine, state algebra, training), :mod:`pflnb.experiments` (runs, cache,
  tables, the verdict rule), :mod:`pflnb.plots`;
* this package — :mod:`.paper` (the experiments, declared), :mod:`.ledger` (the claims), :mod:`.coverage` (the
  paper's items), :mod:`.experiments` (views of the runs: Fed-CO2's online / offline / fused models as rows of their
  own, the ablation and label-skew tables, the structural identity check, the theory sizes, the paper's reported
  numbers), :mod:`.ntk_co2` (its theory: NTK Gram matrices of the online, offline and cooperative two-layer nets,
  Theorem 4.3, finite-width kernels, gradient descent and rate bounds), :mod:`.plots`, :mod:`.claims` (the rules of
  the derived claims).
"""

from pflnb.papers.fedco2.paper import PAPER

__all__ = ["PAPER"]
