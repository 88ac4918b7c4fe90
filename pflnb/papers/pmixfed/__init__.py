"""pMixFed (*Mixing up Model Coefficients for Efficient Personalized Federated Learning*): everything only this
paper uses. Notebook: ``notebooks/04_pmixfed.ipynb``; spec: ``shared/specs/pmixfed.md``.

Modules of this package:

* :mod:`.paper`: the experiments (Table 1 and its MobileNet grid, the Table 2 analogue with a 15-block MLP, the
  mismatched protocol, Fig. 5 μ strategies with the random and adaptive Beta mix factor, Fig. 4 forced collapse,
  Table 3 heterogeneous depths), declared; :mod:`.cells`: the (dataset, federation) cells of every profile;
  :mod:`.ledger`: the claims; :mod:`.coverage`: the paper's items;
* :mod:`.experiments`: the paper's numbers (Tables 1 and 3), the mismatched protocol, and the views of the runs
  the notebook shows and the claims read;
* :mod:`.plots`: Figs. 3, 4, 5, 7, 8, the λ-profile heatmaps, the μ/λ evolution of a run, the λ-vs-lr and
  theory figures;
* :mod:`.mixup`: the theory only pMixFed uses (mixing vs learning-rate identities E1–E8, Lemma 1, Theorem 3);
* :mod:`.claims`: the rules of the derived claims, under the one verdict rule (:mod:`pflnb.experiments.claims`).

Registry methods (:mod:`pflnb.algorithms`): ``pmixfed``, ``pmixfed-dynamic``, ``pmixfed-hetero``,
``fedsim-shock`` (all in :mod:`pflnb.algorithms.pmixfed`), and the baselines ``fedavg``, ``fedavg-ft``,
``fedbabu``, ``fedalt``, ``fedsim``, ``lg-fedavg`` (cold start ``unseen_personal="average"``, in
:mod:`pflnb.algorithms.partial`), ``per-fedavg``, ``pfedme``, ``ditto``.

Models (:mod:`pflnb.models`): ``pmixfed-cnn`` (the paper's MNIST CNN shape, cpu profile), ``pmixfed-cifar-cnn``,
``cnn`` and ``mobilenet-v1`` (paper profile), ``pmixfed-mlp4`` / ``pmixfed-mlp8`` / ``pmixfed-mlp15`` (homogeneous
depth) and ``pmixfed-depth-mlp15`` (Table 3, depth-cuttable).

Shared modules: :mod:`pflnb.fl` (engine, state algebra, training), :mod:`pflnb.data` (Fashion-MNIST,
digits5-lite, Dirichlet / pathological partitions), :mod:`pflnb.experiments` (configs, cached runs, tables,
the verdict rule), :mod:`pflnb.plots` (style).
"""

from pflnb.papers.pmixfed.paper import PAPER

__all__ = ["PAPER"]
