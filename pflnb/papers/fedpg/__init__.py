"""FedPG (*Preserving Global Performance in Personalized Federated Learning*): notebook ``notebooks/03_fedpg.ipynb``.

What the paper uses, in one place:

* registry methods (:mod:`pflnb.algorithms`): ``fedpg`` and ``s-fedpg`` (:mod:`pflnb.algorithms.fedpg`: the common
  descent direction, direction drift, Armijo line search; ablations M1–M4 are its parameters); baselines ``local``,
  ``fedavg-ft``, ``ditto``, ``fedrep``, ``fedmgda+``, ``apfl``, ``fedprox``, ``pfedme``;
* models (:mod:`pflnb.models`): ``mlp2`` (the paper's FMNIST MLP, at 14×14 inputs below the paper profile) and
  ``cifar-cnn`` (CIFAR-10/100 at the paper profile);
* shared modules: :mod:`pflnb.theory.mgda` (Wolfe's min-norm solver, the fair objective, FedPG's direction, the
  closed form of γ_i), :mod:`pflnb.fl` (engine), :mod:`pflnb.data` (Fashion-MNIST, Dirichlet and pathological
  partitions), :mod:`pflnb.experiments` (cached runs, tables, the verdict rule), :mod:`pflnb.plots`;
* this package: :mod:`.experiments` (settings per profile, configs, the P-model metrics L/S/G-acc and GM, protocols P1
  and P2, Fig. 5 runs), :mod:`.plots` (figures), :mod:`.fedpg_convex` (convex toy, Fig. 1 baseline directions, common
  descent probability), :mod:`.claims` (the claims under the verdict rule).
"""

from pflnb.papers.fedpg.experiments import BASELINES, METHODS, seeds, settings

__all__ = ["BASELINES", "METHODS", "seeds", "settings"]
