"""One shape for a paper: experiments and claims declared as data, one function to run an experiment, one to decide
the claims. This module gathers the public names of the four modules that hold them, each one concern:

- :mod:`pflnb.experiments.declarations`: the **experiments** (:class:`Experiment`): a name, the dataset, the
  experiment's config fields per profile (the second and last config layer, over the profile table of
  :func:`~pflnb.experiments.config.profile_config`), the compared **arms** (:class:`Arm`: label → registered method,
  its parameters and config fields of its own), the seeds per profile, optionally a grid (a config field swept for
  every arm), an evaluation protocol and the tuning (:class:`Tune`);
- :mod:`pflnb.experiments.claimspec`: the **claims** (:class:`Compare`, :class:`Best`, :class:`Derived`): the
  claim's text, the paper's value, which experiment and arms it reads and which rule decides it
  (:mod:`pflnb.experiments.claims`), the coverage of the paper's items (:class:`Item`) and the :class:`Paper`;
- :mod:`pflnb.experiments.tuning`: :func:`run_experiment` runs a named experiment of a paper at a profile on any
  executor, each arm tuned first, and returns an :class:`ExperimentResult` (:mod:`pflnb.experiments.result`: a tidy
  table, one row per run, and the records);
- :mod:`pflnb.experiments.deciding`: :func:`decide` turns the results into
  :class:`~pflnb.experiments.claims.Claim` rows, one signature for every paper.

What stays paper-specific is what is really the paper's: its theory, its figures and its own views of the records (a
:class:`Derived` claim names one).

The path of one experiment through the code: notebook → :func:`run_experiment` → the declaration
(:class:`Experiment` in ``pflnb/papers/<paper>/paper.py``) → :func:`~pflnb.experiments.run.run_many` →
:func:`~pflnb.experiments.executors.execute` → the engine (:func:`~pflnb.fl.run_simulation`) → the algorithm's
hooks; then :func:`decide` → the rule in :mod:`pflnb.experiments.claims`.
"""

from __future__ import annotations

from pflnb.experiments.claimspec import (  # noqa: F401
    COVERAGE_STATUSES,
    VALIDATION,
    Best,
    Cite,
    ClaimSpec,
    Compare,
    Derived,
    Item,
    Paper,
    View,
)
from pflnb.experiments.deciding import (  # noqa: F401
    EXTENDED_RUN,
    PARAMETERS,
    coverage_table,
    decide,
    fragility,
    robustness_path,
    write_coverage,
)
from pflnb.experiments.declarations import (  # noqa: F401
    ADAM_LRS,
    EDGE_STEPS,
    KEY_GRIDS,
    OPTIMIZER_LRS,
    SCALE_FIELDS,
    SGD_LRS,
    TUNING_SEED,
    TUNING_SEEDS,
    Arm,
    Choice,
    Chooser,
    Experiment,
    Setting,
    Tune,
    _declared_runs,
    arm_config,
    best_on_validation,
    excluded,
    experiment_chance,
    lr_tuning,
    runs_with,
    setting_stand_in,
    tuning_score,
)
from pflnb.experiments.result import ExperimentResult  # noqa: F401
from pflnb.experiments.tuning import (  # noqa: F401
    EDGE_COLUMNS,
    _with_arms,
    beyond_edge,
    edge_cells,
    edge_counts,
    edge_report,
    run_experiment,
    tune_experiment,
    tuned_experiments,
    tuning_columns,
    tuning_edges,
    tuning_summary,
    write_tuning_edges,
)
