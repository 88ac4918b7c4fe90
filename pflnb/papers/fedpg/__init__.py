"""FedPG (*Preserving Global Performance in Personalized Federated Learning*): notebook ``notebooks/03_fedpg.ipynb``.

What the paper uses, in one place:

* registry methods (:mod:`pflnb.algorithms`): ``fedpg`` and ``s-fedpg`` (:mod:`pflnb.algorithms.fedpg`: the common
  descent direction, direction drift, Armijo line search; ablations M1–M4 are its parameters); baselines ``local``,
  ``fedavg-ft``, ``ditto``, ``fedrep``, ``fedmgda+``, ``apfl``, ``fedprox``, ``pfedme``;
* models (:mod:`pflnb.models`): ``mlp2`` (the paper's FMNIST MLP, at 14×14 inputs below the paper profile),
  ``cifar-cnn`` (CIFAR-10/100 at the paper profile) and ``small-cnn`` (the CIFAR CNN at a quarter width: the CNN
  analogues of the CIFAR-10 items on digits5-lite below the paper profile);
* shared modules: :mod:`pflnb.theory.mgda` (Wolfe's min-norm solver, the fair objective, FedPG's direction, the
  closed form of γ_i), :mod:`pflnb.fl` (engine), :mod:`pflnb.data` (Fashion-MNIST, digits5-lite, Dirichlet and
  pathological partitions), :mod:`pflnb.experiments` (the paper shape, cached runs, tables, the verdict rule), :mod:`pflnb.plots`;
* this package: :mod:`.paper` (the experiments Table 1, ablations and Fig. 5, their CNN analogues and App. B.1's
  scenarios, declared as data), :mod:`.ledger` (the claims), :mod:`.coverage` (the paper's items),
  :mod:`.experiments` (the P-model job and metrics L/S/G-acc and GM, protocols P1 and P2, Fig. 5's S-acc protocol,
  the notebook's tables), :mod:`.plots` (figures), :mod:`.fedpg_convex` (convex toy, Fig. 1 baseline directions,
  common descent probability), :mod:`.claims` (the rules behind the claims).
"""

from pflnb.papers.fedpg.paper import PAPER

__all__ = ["PAPER"]
