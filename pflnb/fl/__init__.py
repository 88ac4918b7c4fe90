"""The federated simulation engine: state algebra, hooks, local training, the round loop."""

from pflnb.fl import state
from pflnb.fl.algorithm import Algorithm, ClientUpdate, NoParams
from pflnb.fl.engine import (
    Context,
    RunSettings,
    Schedule,
    derive_seed,
    drive,
    run_simulation,
    run_stacked,
    sample_clients,
    simulate,
    summarize,
)
from pflnb.fl.plan import Batch, FeatureRecord, LocalPlan, Phase, PlanResult, Prox, ProxStep, Term
from pflnb.fl.runner import RUNNERS, BatchedRunner, ClientRunner, LocalWork, SequentialRunner, make_runner
from pflnb.fl.sequential import run_plan
from pflnb.fl.training import OptimConfig, epoch_batches, evaluate, train_epochs

__all__ = [
    "RUNNERS",
    "Algorithm",
    "Batch",
    "BatchedRunner",
    "ClientRunner",
    "ClientUpdate",
    "FeatureRecord",
    "LocalPlan",
    "LocalWork",
    "Phase",
    "PlanResult",
    "Prox",
    "ProxStep",
    "Context",
    "NoParams",
    "OptimConfig",
    "RunSettings",
    "Schedule",
    "SequentialRunner",
    "Term",
    "derive_seed",
    "drive",
    "epoch_batches",
    "evaluate",
    "make_runner",
    "run_plan",
    "run_simulation",
    "run_stacked",
    "sample_clients",
    "simulate",
    "state",
    "summarize",
    "train_epochs",
]
