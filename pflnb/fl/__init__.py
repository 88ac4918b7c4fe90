"""The federated simulation engine: state algebra, hooks, local training, the round loop."""

from pflnb.fl import state
from pflnb.fl.algorithm import Algorithm, ClientUpdate, NoParams
from pflnb.fl.engine import Context, RunSettings, SequentialRunner, derive_seed, run_simulation, sample_clients, summarize
from pflnb.fl.training import OptimConfig, epoch_batches, evaluate, train_epochs

__all__ = [
    "Algorithm",
    "ClientUpdate",
    "Context",
    "NoParams",
    "OptimConfig",
    "RunSettings",
    "SequentialRunner",
    "derive_seed",
    "epoch_batches",
    "evaluate",
    "run_simulation",
    "sample_clients",
    "state",
    "summarize",
    "train_epochs",
]
