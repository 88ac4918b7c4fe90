"""Flower apps built from any registered method: a ClientApp and a ServerApp that run pflnb's own engine pieces.

Nothing here implements a method. The ClientApp runs the method's local step through the same client runner as the
engine (:mod:`pflnb.fl.runner`: the declared local plan, ``finish_local``), seeded exactly as the engine seeds that
(config, round, client); the ServerApp samples clients with the engine's sampler and runs the method's own server
step (:func:`pflnb.fl.engine.server_step`, i.e. ``aggregate``). One round, as Flower messages:

1. ``train`` to the sampled clients: the server state (``server.arrays`` / ``server.layout``) and the round
   (``config``); each client loads its own state from Flower's per-client ``context.state`` (the method's ``init``
   the first time), trains, keeps its new state there, and replies with the method's message (``message.arrays`` /
   ``message.layout``), its train metrics (``metrics``, a MetricRecord with ``num-examples``) and the exact metrics;
2. the server's step on those messages;
3. ``train.after_aggregate`` to the sampled clients, only for a method with an ``after_aggregate`` hook (LG-Mix's
   mixing, FedPG, L2SGD): the new server state, the client updates its own state;
4. on evaluation rounds, ``evaluate`` to every client: accuracy and loss on its val and test splits (a MetricRecord).

Before the first round a ``query`` to every node asks which partition (client id) it holds, its training-set size
(the aggregation weight) and the data's shapes (the server builds the model from them). Personal state never leaves a
client unless the method puts it in its message. State dicts travel as :class:`flwr.app.ArrayRecord` s; whatever else
a state holds (floats, lists, nested dicts) travels in a ConfigRecord beside it (:func:`pack` / :func:`unpack`).

Entry points: :func:`client_app` and :func:`server_app` (Flower apps from an :class:`ExperimentConfig`, or from the
``flwr run`` project's run config when none is given), :func:`run_flower` (Flower's simulation engine, returns a run
record shaped like the engine's), and ``pflnb run --engine flower``. The guide: docs/guides/flower.md.
"""

from pflnb.flower.client import ClientSide, client_app, client_query, handle
from pflnb.flower.messages import (
    AFTER_AGGREGATE,
    EVAL_KEYS,
    FlowerUnsupported,
    RecordDict,
    check_supported,
    config_from_run_config,
    pack,
    unpack,
)
from pflnb.flower.server import (
    FlowerClients,
    ServerData,
    num_nodes,
    run_flower,
    run_in_process,
    same_numbers,
    serve,
    server_app,
)

__all__ = [
    "AFTER_AGGREGATE",
    "EVAL_KEYS",
    "ClientSide",
    "FlowerClients",
    "FlowerUnsupported",
    "RecordDict",
    "ServerData",
    "check_supported",
    "client_app",
    "client_query",
    "config_from_run_config",
    "handle",
    "num_nodes",
    "pack",
    "run_flower",
    "run_in_process",
    "same_numbers",
    "serve",
    "server_app",
    "unpack",
]
