"""LG-Mix (Jiang, Le, Li, Dou; ICLR 2024): mixing local and global updates by NTK convergence rates.

Everything of this paper, in one place (notebook ``notebooks/01_lgmix.ipynb``):

* registry methods — the method: ``lgmix`` (:mod:`pflnb.algorithms.lgmix`; ``lambda_mode="fixed"`` gives the fixed
  ratio); baselines: ``local``, ``fedavg``, ``fedbn``, ``fedprox``, ``fedrep``, ``fedbabu``, ``fedalt``
  (:mod:`pflnb.algorithms.partial`), ``apfl``, ``ditto`` (:mod:`pflnb.algorithms.personal`), ``per-fedavg``
  (:mod:`pflnb.algorithms.meta`), ``l2sgd``, ``fedfomo``, ``fedhkd`` (:mod:`pflnb.algorithms.fedhkd`);
* models — ``small-bn-cnn`` and ``mlp`` (cpu profile), ``digit`` (FedBN's DigitModel) and ``resnet18`` (paper
  profile) from :mod:`pflnb.models`;
* shared modules — :mod:`pflnb.theory.ntk` (two-layer ReLU Gram matrices, H∞, Prop. 1 rates, empirical NTK traces,
  the Theorem 1 simulation), :mod:`pflnb.data` (digits5-lite; digits-shift, the Tables 1–2 analogue; Digits5,
  Office-Caltech10, DomainNet-10 in the FedBN layout), :mod:`pflnb.experiments` (runs, cache, tables, the verdict rule);
* this package — :mod:`.paper` (the experiments, declared), :mod:`.ledger` (the claims), :mod:`.coverage` (the
  paper's items), :mod:`.experiments` (views of the runs: final states, tables of λ, features and layer distances),
  :mod:`.checks` (theory checks T1–T8 and the analyses behind the figures), :mod:`.plots`, :mod:`.claims` (the rules
  of the derived claims).
"""

from pflnb.papers.lgmix.paper import PAPER

__all__ = ["PAPER"]
