"""FedSplit / FedFac (Wang, Tang & Li, arXiv:2312.04281): factor analysis splits the hidden elements of the layers Λ
into shared (averaged) and personalized (local) ones. Notebook: ``notebooks/05_fedfac.ipynb``.

What the paper uses, in one place:

* registry methods (:mod:`pflnb.algorithms`): ``fedfac`` (FedSplit with a given split, static and dynamic FedFac,
  random splits, the masking ablation, the official code's switches ``threshold="mean"``, ``threshold="given"``,
  ``bias="local"``), and the baselines ``fedavg``, ``fedprox``, ``fedper``, ``lg-fedavg``, ``fedrep``, ``ditto``,
  ``apfl``, ``local``;
* models (:mod:`pflnb.models`): ``fedfac-cnn`` (2 conv + 2 FC, the paper's FEMNIST shape), ``cifar-cnn`` (paper
  profile), :class:`pflnb.models.nets.MLP` (simulation and Figs. 1–2);
* data: Fashion-MNIST and digits5-lite (:mod:`pflnb.data`), the Eq. (8) DGP and the digits clients of Figs. 1–2
  (:mod:`pflnb.data.simulation_fedfac`);
* shared theory: :mod:`pflnb.theory.factor` (factor analysis: PAF and the least-squares fit, communalities, the
  threshold rules, recovery metrics, k-NN entropy);
* this package: :mod:`.paper` (the engine experiments, declared), :mod:`.ledger` (the claims), :mod:`.coverage` (the
  paper's items), :mod:`.experiments` (the simulation, Figs. 1–2 and theory drivers, the tuning on validation
  accuracy, views of the runs), :mod:`.simstudy` (the simulation study's settings and runs), :mod:`.motivation`
  (Figs. 1–2), :mod:`.timing` (Table 7), :mod:`.fedsplit` (the §3 kernels, Theorem 1 and 2), :mod:`.featuremaps`
  (Fig. 10: the split conv layer's maps against FedAvg's), :mod:`.plots` (figures), :mod:`.claims` (the rules of the
  derived claims).
"""

from pflnb.papers.fedfac.paper import PAPER

__all__ = ["PAPER"]
