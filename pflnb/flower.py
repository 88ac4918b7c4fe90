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

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import FederatedDataset, build_federated
from pflnb.experiments import ray_backend
from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.experiments.jobs import thread_limits
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.engine import (
    Clients,
    Context,
    RunSettings,
    begin_round,
    check_finite,
    initial_state,
    simulate,
    to_jsonable,
)
from pflnb.fl.runner import ClientRunner, LocalWork, make_runner
from pflnb.models import build_model

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")  # read when flwr is imported: a reproduction sends no telemetry
try:
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
    from flwr.app import Context as FlowerContext
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
except ImportError as err:  # pragma: no cover - flwr is in requirements.txt
    raise ImportError("pflnb.flower needs Flower: pip install 'pflnb[flower]' (flwr[simulation] 1.42)") from err

log = logging.getLogger("flwr").getChild("pflnb")  # Flower's handler shows it (flwr run --stream, simulations)
STATE = "pflnb-"  # prefix of the records this app keeps in a client's context.state
EVAL_KEYS = ("val_acc", "test_acc", "val_loss", "test_loss")
AFTER_AGGREGATE = "train.after_aggregate"
REPLY_TIMEOUT = 3600.0  # seconds the server waits for a round's replies (Flower's strategies wait as long)


class FlowerUnsupported(ValueError):
    """A run that the Flower apps cannot execute as the engine does (the reason names the method and what it needs)."""


# ---- state dicts and other state in Flower records ----------------------------------------------------------------


def pack(value: Any, name: str) -> RecordDict:
    """``value`` (a state: nested dicts, lists and tuples of tensors, arrays and plain values) as two Flower records:
    ``<name>.arrays``, an ArrayRecord of every tensor (keyed by its path, e.g. ``model/conv1.weight``), and
    ``<name>.layout``, a ConfigRecord holding the structure and the plain values as JSON (exact: floats by ``repr``)."""
    tensors: dict[str, torch.Tensor] = {}

    def enc(v: Any, path: str) -> Any:
        if isinstance(v, torch.Tensor):
            key = path if path not in tensors else f"{path}#{len(tensors)}"
            tensors[key] = v.detach().cpu()
            return {"T": key}
        if isinstance(v, np.ndarray):
            key = path if path not in tensors else f"{path}#{len(tensors)}"
            tensors[key] = torch.from_numpy(np.ascontiguousarray(v))
            return {"N": key}
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if isinstance(k, bool) or not isinstance(k, str | int):
                    raise TypeError(f"{name}: key {k!r} at {path or '/'} is neither a string nor an integer")
                items.append([k if isinstance(k, str) else {"I": k}, enc(x, f"{path}/{k}" if path else str(k))])
            return {"D": items}
        if isinstance(v, list | tuple):
            return {"L" if isinstance(v, list) else "U": [enc(x, f"{path}/{i}") for i, x in enumerate(v)]}
        if isinstance(v, np.generic):
            return {"G": [v.dtype.str, v.item()]}
        if v is None or isinstance(v, bool | int | float | str):
            return v
        raise TypeError(f"{name}: cannot send a {type(v).__name__} at {path or '/'} in a Flower record")

    layout = json.dumps(enc(value, ""), allow_nan=True)
    return RecordDict({f"{name}.arrays": ArrayRecord(tensors), f"{name}.layout": ConfigRecord({"json": layout})})


def unpack(records: RecordDict, name: str, device: torch.device | str = "cpu") -> Any:
    """The value that :func:`pack` put in ``records`` under ``name``, its tensors on ``device``."""
    arrays = records.array_records[f"{name}.arrays"]
    tensors = {k: torch.from_numpy(np.array(a.numpy(), copy=True)).to(device) for k, a in arrays.items()}  # not a tensor

    def dec(v: Any) -> Any:
        if isinstance(v, dict):
            ((tag, x),) = v.items()
            if tag in ("T", "N"):
                return tensors[x] if tag == "T" else tensors[x].cpu().numpy()
            if tag == "D":
                return {(k["I"] if isinstance(k, dict) else k): dec(y) for k, y in x}
            if tag in ("L", "U"):
                items = [dec(y) for y in x]
                return items if tag == "L" else tuple(items)
            if tag == "G":
                return np.dtype(x[0]).type(x[1])
            if tag == "I":
                return x
        return v

    return dec(json.loads(records.config_records[f"{name}.layout"]["json"]))


def _merge(*parts: RecordDict) -> RecordDict:
    out = RecordDict()
    for part in parts:
        for k, v in part.items():
            out[k] = v
    return out


def _numbers(metrics: Mapping[str, Any]) -> dict[str, int | float]:
    """The int and float entries of ``metrics`` (a MetricRecord takes numbers only)."""
    out: dict[str, int | float] = {}
    for k, v in to_jsonable(dict(metrics)).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            out[k] = v
    return out


# ---- the config of a run ------------------------------------------------------------------------------------------


def config_from_run_config(run_config: Mapping[str, Any]) -> ExperimentConfig:
    """The ExperimentConfig a Flower run config describes: ``profile`` and ``dataset`` pick the profile's row,
    ``method-params`` (a JSON object) the method's hyperparameters, ``num-server-rounds`` the rounds, and any other key
    a config field (Flower's dashes for underscores: ``local-epochs``); the app's own keys (``out``, ``server-data``)
    are skipped."""
    values = {str(k).replace("-", "_"): v for k, v in run_config.items() if str(k) not in ("out", "server-data")}
    if "num_server_rounds" in values:  # Flower's name for the number of rounds
        values["rounds"] = values.pop("num_server_rounds")
    profile = values.pop("profile", "smoke")
    dataset = values.pop("dataset", "digits5-lite")
    params = values.pop("method_params", "{}")
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"run config method-params must be a JSON object, got {params!r}: {e}") from None
    if not isinstance(params, dict):
        raise ValueError(f"run config method-params must be a JSON object, got {params!r}")
    if isinstance(values.get("fractions"), list):
        values["fractions"] = tuple(values["fractions"])
    cfg = profile_config(profile, dataset, **values, method_params=params)
    cfg.validate()
    return cfg


def check_supported(cfg: ExperimentConfig) -> None:
    """Raise FlowerUnsupported for what the Flower apps do not run (held-out clients: the engine evaluates them
    on the server with the clients' data)."""
    if cfg.unseen_clients:
        raise FlowerUnsupported(
            f"unseen_clients={cfg.unseen_clients}: the Flower apps do not evaluate held-out clients; use the engine (pflnb run)"
        )


# ---- the client side ----------------------------------------------------------------------------------------------


@dataclass
class ClientSide:
    """What a client process builds once per config: the method, the data (each client reads only its partition),
    the engine's context and the client runner."""

    cfg: ExperimentConfig
    algorithm: Algorithm
    data: FederatedDataset
    ctx: Context
    runner: ClientRunner
    _init_clients: list[dict[str, Any]] | None = None

    @classmethod
    def build(cls, cfg: ExperimentConfig) -> ClientSide:
        """The method, data, context (on the config's device) and runner of ``cfg``."""
        device = pflnb.device(cfg.device)
        algorithm = make_algorithm(cfg.method, cfg.method_params)
        data = _data(cfg, device)

        def model_fn():
            return build_model(cfg.model, data.input_shape, data.num_classes)

        ctx = Context(data, model_fn, cfg.optim(), cfg.seed, device, cfg.finetune_epochs)
        return cls(cfg, algorithm, data, ctx, make_runner(cfg.runner, algorithm, device, ctx.model))

    def initial_client(self, cid: int) -> dict[str, Any]:
        """Client ``cid``'s state before its first round: the method's ``init`` from the engine's seeded initial model."""
        if self._init_clients is None:
            init = initial_state(self.ctx.model_fn, self.cfg.seed, self.ctx.device)
            _, self._init_clients = self.algorithm.init(self.ctx, init)
        return self._init_clients[cid]


_SIDES: dict[tuple[str, str], ClientSide] = {}
_DATA: dict[str, FederatedDataset] = {}


def _data(cfg: ExperimentConfig, device: torch.device) -> FederatedDataset:
    """The federated data of ``cfg`` on ``device``, built once per process for every run on the same data (a sweep of
    methods); the client reads its own partition of it."""
    key = json.dumps([cfg.data_spec().__dict__, cfg.seed, str(device)], sort_keys=True, default=str)
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = build_federated(cfg.data_spec(), seed=cfg.seed).to(device)
    return _DATA[key]


def client_side(cfg: ExperimentConfig) -> ClientSide:
    """The cached :class:`ClientSide` of ``cfg`` in this process (one run at a time: runs of a sweep follow each other)."""
    key = (cfg.key(), cfg.runner)
    if key not in _SIDES:
        _SIDES.clear()
        _SIDES[key] = ClientSide.build(cfg)
    return _SIDES[key]


def _load_client(side: ClientSide, cid: int, state: RecordDict) -> dict[str, Any]:
    """Client ``cid``'s state kept on this node for the current run; the method's initial state the first time (a
    state another run of the sweep left here is replaced)."""
    owner = state.config_records.get(f"{STATE}owner")
    if owner is None or owner["key"] != side.cfg.key():
        return side.initial_client(cid)
    if owner["cid"] != cid:
        raise ValueError(f"this node's state belongs to client {owner['cid']}, not to partition {cid}")
    return unpack(state, f"{STATE}client", side.ctx.device)


def _store_client(side: ClientSide, cid: int, state: RecordDict, client: dict[str, Any]) -> None:
    for k, v in pack(client, f"{STATE}client").items():
        state[k] = v
    state[f"{STATE}owner"] = ConfigRecord({"key": side.cfg.key(), "cid": cid})


def _divergence(found: dict | None) -> RecordDict:
    return RecordDict({"divergence": ConfigRecord({"json": json.dumps(found)})}) if found else RecordDict()


def client_query(side: ClientSide, cid: int) -> RecordDict:
    """A client's answer to the server's query: its client id, training-set size and the data's shapes."""
    if not 0 <= cid < side.data.num_clients:
        raise ValueError(f"partition-id {cid} is not a client of this data ({side.data.num_clients} clients)")
    info = {
        "partition-id": cid,
        "num-examples": side.ctx.n_train(cid),
        "num-clients": side.data.num_clients,
        "num-classes": side.data.num_classes,
    }
    client = side.data.clients[cid]
    return RecordDict(
        {
            "info": MetricRecord(info),
            "shape": ConfigRecord({"input-shape": list(side.data.input_shape)}),
            "client": ConfigRecord({"json": json.dumps({"name": client.name, "domain": client.domain})}),
        }
    )


def client_train(side: ClientSide, cid: int, content: RecordDict, state: RecordDict) -> RecordDict:
    """A client's round: its state from ``state`` (the method's init the first time), the method's local step through
    the engine's client runner, the new state kept in ``state``; replies the method's message and the metrics."""
    t = int(content.config_records["config"]["round"])
    ctx = side.ctx
    begin_round(ctx, side.cfg.optim(), t)
    server = unpack(content, "server", ctx.device)
    client = _load_client(side, cid, state)
    up: ClientUpdate = side.runner.run(side.algorithm, ctx, server, {cid: client}, [cid])[cid]  # type: ignore[arg-type]
    _store_client(side, cid, state, up.client)
    metrics = to_jsonable(up.metrics)
    found = check_finite(t, {cid: up}, {}, {cid: up.client})  # type: ignore[arg-type]
    reply = RecordDict(
        {
            "metrics": MetricRecord({**_numbers(metrics), "num-examples": ctx.n_train(cid)}),
            "metrics.exact": ConfigRecord({"json": json.dumps(metrics, allow_nan=True)}),
        }
    )
    return _merge(pack(up.message, "message"), reply, _divergence(found))


def client_after_aggregate(side: ClientSide, cid: int, content: RecordDict, state: RecordDict) -> RecordDict:
    """A sampled client's ``after_aggregate`` with the new server state (LG-Mix's mixing step), kept in ``state``."""
    t = int(content.config_records["config"]["round"])
    ctx = side.ctx
    begin_round(ctx, side.cfg.optim(), t)
    server = unpack(content, "server", ctx.device)
    client = side.algorithm.after_aggregate(ctx, cid, server, _load_client(side, cid, state))
    _store_client(side, cid, state, client)
    found = check_finite(t, {cid: ClientUpdate(client, {})}, {}, {cid: client})  # type: ignore[arg-type]
    return _divergence(found)


def client_evaluate(side: ClientSide, cid: int, content: RecordDict, state: RecordDict) -> RecordDict:
    """A client's evaluation through the engine's client runner: accuracy and loss on its val and test splits."""
    t = int(content.config_records["config"]["round"])
    ctx = side.ctx
    begin_round(ctx, side.cfg.optim(), t)
    server = unpack(content, "server", ctx.device)
    client = _load_client(side, cid, state)
    ev = side.runner.evaluate(side.algorithm, ctx, server, {cid: client}, [cid])  # type: ignore[arg-type]
    row = {k: float(ev[k][0]) for k in EVAL_KEYS}
    return RecordDict({"metrics": MetricRecord({**row, "num-examples": len(ctx.client(cid).test)})})


CLIENT_STEPS: dict[str, Callable[[ClientSide, int, RecordDict, RecordDict], RecordDict]] = {
    "train": client_train,
    AFTER_AGGREGATE: client_after_aggregate,
    "evaluate": client_evaluate,
}


def message_config(content: RecordDict) -> ExperimentConfig:
    """The run's config that the server sends in every message (``config["run"]``, the config as JSON)."""
    if "config" not in content.config_records or "run" not in content.config_records["config"]:
        raise ValueError("a pflnb message carries its run's config in config['run']; this one has none")
    return ExperimentConfig.from_dict(json.loads(content.config_records["config"]["run"]))


def handle(kind: str, cid: int, content: RecordDict, state: RecordDict) -> RecordDict:
    """Run client step ``kind`` (query, train, train.after_aggregate, evaluate) of client ``cid`` for the run the
    message names, with that config's threads and determinism controls."""
    cfg = message_config(content)
    with ExitStack() as stack:
        stack.enter_context(thread_limits(cfg.threads))
        stack.enter_context(pflnb.determinism(cfg.deterministic))
        side = client_side(cfg)
        if kind == "query":
            return client_query(side, cid)
        if kind not in CLIENT_STEPS:
            raise ValueError(f"unknown message type {kind!r}; expected query or one of {sorted(CLIENT_STEPS)}")
        return CLIENT_STEPS[kind](side, cid, content, state)


def _partition(context: FlowerContext) -> int:
    if "partition-id" not in context.node_config:
        raise ValueError("this node has no partition-id in its node config (Flower's simulation sets it)")
    return int(context.node_config["partition-id"])


def client_app() -> ClientApp:
    """A Flower ClientApp that runs any registered method: the server's messages name the run (its config), the node's
    ``partition-id`` the client; the client's state lives in the node's ``context.state``."""
    app = ClientApp()

    def respond(kind: str) -> Callable[[Message, FlowerContext], Message]:
        def fn(msg: Message, context: FlowerContext) -> Message:
            content = handle(kind, _partition(context), msg.content, context.state)
            return Message(content=content, reply_to=msg)

        fn.__name__ = kind.replace(".", "_")
        return fn

    app.query()(respond("query"))
    app.train()(respond("train"))
    app.train("after_aggregate")(respond(AFTER_AGGREGATE))
    app.evaluate()(respond("evaluate"))
    return app


# ---- the server side ----------------------------------------------------------------------------------------------


SERVER_DATA_HINT = (
    "in Flower a client's data stays on the client. This method's server step reads the clients' data (FedPG's and "
    "S-FedPG's losses at the new model, pMixFed's accuracy of the global model): in a simulation, server_data=True "
    "(run config server-data = true, pflnb run --engine flower --server-data) lets the ServerApp build the data too"
)


class _RemoteSplit:
    """A client's split as the server sees it: its size, never its samples."""

    def __init__(self, cid: int, size: int) -> None:
        self.cid, self.size = cid, size

    def __len__(self) -> int:
        return self.size

    def __getattr__(self, name: str) -> Any:
        raise FlowerUnsupported(f"the server step read client {self.cid}'s data ({name}); {SERVER_DATA_HINT}")


class _RemoteClient:
    """A client as the server sees it: its name, domain and training-set size, never its samples."""

    def __init__(self, cid: int, n_train: int, name: str = "", domain: str | None = None) -> None:
        self.cid, self.train, self.name, self.domain = cid, _RemoteSplit(cid, n_train), name, domain

    def __getattr__(self, name: str) -> Any:
        raise FlowerUnsupported(f"the server step read client {self.cid}'s data ({name}); {SERVER_DATA_HINT}")


@dataclass
class ServerData:
    """What the server knows of the federation: the clients' training-set sizes (the aggregation weights) and the data's
    shapes, from the clients' answers to its query."""

    n_train: list[int]
    num_classes: int
    input_shape: tuple[int, ...]
    described: list[dict[str, Any]] = field(default_factory=list)  # each client's name and domain
    clients: list[_RemoteClient] = field(default_factory=list)
    unseen: list = field(default_factory=list)

    def __post_init__(self) -> None:
        about = self.described or [{} for _ in self.n_train]
        self.clients = [_RemoteClient(cid, n, **about[cid]) for cid, n in enumerate(self.n_train)]

    def to(self, device: torch.device | str) -> ServerData:
        """Itself: the server holds no samples to move."""
        return self

    @property
    def num_clients(self) -> int:
        """Number of clients in the federation."""
        return len(self.n_train)


Send = Callable[[str, dict[int, RecordDict]], dict[int, RecordDict]]


def _config(cfg: ExperimentConfig, t: int = 0) -> RecordDict:
    return RecordDict({"config": ConfigRecord({"round": t, "run": json.dumps(cfg.to_dict())})})


def _round_content(cfg: ExperimentConfig, server: dict[str, Any], t: int) -> RecordDict:
    return _merge(pack(server, "server"), _config(cfg, t))


def _first_divergence(replies: dict[int, RecordDict], order: list[int]) -> dict | None:
    for cid in order:
        if "divergence" in replies[cid].config_records:
            return json.loads(replies[cid].config_records["divergence"]["json"])
    return None


class FlowerClients(Clients):
    """The clients as Flower's server reaches them, through the engine's one round loop (:func:`~pflnb.fl.engine.simulate`):
    their states stay on the clients (each node's ``context.state``), each step travels as a message (``send``: message
    type, {client id: content} → {client id: reply}), and each client checks its own state for divergence. What reads
    the clients' states at the server (the method's internals and extra metrics, held-out clients, checkpoints, final
    states) is not recorded."""

    local = False

    def __init__(self, cfg: ExperimentConfig, send: Send, num_nodes: int) -> None:
        super().__init__()
        self.cfg, self.send, self.num_nodes = cfg, send, num_nodes
        self.found: dict | None = None  # the first divergence a client reported this round

    def start(self, states: list[dict[str, Any]]) -> None:
        """Nothing kept: each client starts from the method's ``init`` on its first message."""

    def train(self, work: LocalWork) -> dict[int, ClientUpdate]:
        """The round's local work on the sampled clients: their messages and metrics (states stay with them)."""
        t = work.ctx.round
        replies = self.send("train", {cid: _round_content(self.cfg, work.server, t) for cid in work.selected})
        self.found = _first_divergence(replies, work.selected)
        return {
            cid: ClientUpdate(
                {},
                unpack(replies[cid], "message", work.ctx.device),
                json.loads(replies[cid].config_records["metrics.exact"]["json"]),
            )
            for cid in work.selected
        }

    def receive(self, updates: dict[int, ClientUpdate]) -> None:
        """Nothing: the new states stay on the clients."""

    def after_aggregate(self, algorithm: Algorithm, ctx: Context, server: dict[str, Any], selected: list[int]) -> None:
        """The method's ``after_aggregate`` on each sampled client, by message (only for methods that have one)."""
        if type(algorithm).after_aggregate is not Algorithm.after_aggregate:
            after = self.send(AFTER_AGGREGATE, {cid: _round_content(self.cfg, server, ctx.round) for cid in selected})
            self.found = self.found or _first_divergence(after, selected)

    def check(self, round_: int, updates: dict[int, ClientUpdate], server: dict[str, Any]) -> dict | None:
        """A divergence a client reported this round, else the server state's (:func:`~pflnb.fl.engine.check_finite`)."""
        return self.found or check_finite(round_, {}, server, [])

    def evaluate(self, runner: ClientRunner, algorithm: Algorithm, ctx: Context, server: dict[str, Any]) -> dict[str, Any]:
        """Every client's evaluation, by message."""
        rows = self.send("evaluate", {cid: _round_content(self.cfg, server, ctx.round) for cid in range(self.num_nodes)})
        return {k: [float(rows[c].metric_records["metrics"][k]) for c in range(self.num_nodes)] for k in EVAL_KEYS}


def serve(cfg: ExperimentConfig, send: Send, num_nodes: int, server_data: bool = False) -> dict[str, Any]:
    """The server's run over ``send`` (message type, {client id: content} → {client id: reply}): the engine's round loop
    (:func:`~pflnb.fl.engine.simulate`) with the clients reached by messages (:class:`FlowerClients`); returns the run
    record as the engine's (``rounds``, ``evals``, ``summary``, the clients' names and domains; no internals, extra
    metrics, held-out clients or final states, which read the clients' states)."""
    cfg.validate()
    check_supported(cfg)
    t_start = time.perf_counter()
    algorithm = make_algorithm(cfg.method, cfg.method_params)
    settings: RunSettings = cfg.settings(progress=False)
    device = torch.device(settings.device)
    info = send("query", {cid: _config(cfg) for cid in range(num_nodes)})
    n_train = [int(info[c].metric_records["info"]["num-examples"]) for c in range(num_nodes)]
    first = info[0].metric_records["info"]
    if int(first["num-clients"]) != num_nodes:
        raise ValueError(f"the data has {int(first['num-clients'])} clients but the federation {num_nodes} nodes")
    shape = tuple(int(v) for v in info[0].config_records["shape"]["input-shape"])
    described = [json.loads(info[c].config_records["client"]["json"]) for c in range(num_nodes)]
    data: Any = ServerData(n_train, int(first["num-classes"]), shape, described)
    if server_data:  # a simulation's server that reads the clients' data for the method's server step (not federated)
        data = build_federated(cfg.data_spec(), seed=cfg.seed).to(device)

    def model_fn():
        return build_model(cfg.model, data.input_shape, data.num_classes)

    clients = FlowerClients(cfg, send, num_nodes)
    run = simulate(algorithm, data, model_fn, settings, clients=clients)
    try:
        work = next(run)
        while True:
            work = run.send(clients.train(work))
    except StopIteration as stop:
        record: dict[str, Any] = stop.value
    record["engine"] = "flower"
    record["status"] = "diverged" if "divergence" in record else "finished"
    record["config"] = cfg.to_dict()
    record["key"] = cfg.key()
    record["wall_time_s"] = time.perf_counter() - t_start
    return record


def _grid_send(grid: Grid, nodes: dict[int, int]) -> Send:
    """``send`` over Flower's Grid: one message per client (to its node), the replies keyed by client id; a client's
    error is raised here, naming the client."""

    def send(kind: str, contents: dict[int, RecordDict]) -> dict[int, RecordDict]:
        messages = [Message(content=c, dst_node_id=nodes[cid], message_type=kind) for cid, c in contents.items()]
        by_node = {node: cid for cid, node in nodes.items()}
        out: dict[int, RecordDict] = {}
        for reply in grid.send_and_receive(messages, timeout=REPLY_TIMEOUT):
            cid = by_node[reply.metadata.src_node_id]
            if reply.has_error():
                raise RuntimeError(f"client {cid} failed in {kind}: {reply.error.reason}")
            out[cid] = reply.content
        missing = sorted(set(contents) - set(out))
        if missing:
            raise RuntimeError(f"no {kind} reply from client(s) {missing}")
        return out

    return send


def _discover(grid: Grid, cfg: ExperimentConfig, timeout: float = 120.0) -> dict[int, int]:
    """{client id: node id} of every node of the federation (their partition ids, by a query)."""
    deadline = time.monotonic() + timeout
    nodes = list(grid.get_node_ids())
    while not nodes and time.monotonic() < deadline:  # the simulation registers its nodes as the ServerApp starts
        time.sleep(0.1)
        nodes = list(grid.get_node_ids())
    time.sleep(0.2)
    nodes = sorted(grid.get_node_ids())
    if not nodes:
        raise RuntimeError(f"no Flower node joined within {timeout:.0f} s (did the simulation runtime start?)")
    query = [Message(content=_config(cfg), dst_node_id=n, message_type="query") for n in nodes]
    mapping: dict[int, int] = {}
    for reply in grid.send_and_receive(query, timeout=REPLY_TIMEOUT):
        if reply.has_error():
            raise RuntimeError(f"node {reply.metadata.src_node_id} failed the query: {reply.error.reason}")
        mapping[int(reply.content.metric_records["info"]["partition-id"])] = reply.metadata.src_node_id
    if sorted(mapping) != list(range(len(nodes))):  # a node that did not answer, or a partition held twice
        raise ValueError(f"the nodes hold partitions {sorted(mapping)}, expected 0..{len(nodes) - 1}")
    return mapping


Configs = ExperimentConfig | Sequence[ExperimentConfig] | None


def _as_list(cfgs: ExperimentConfig | Sequence[ExperimentConfig]) -> list[ExperimentConfig]:
    runs = [cfgs] if isinstance(cfgs, ExperimentConfig) else list(cfgs)
    if not runs:
        raise ValueError("no run to execute: give at least one ExperimentConfig")
    keys = [c.key() for c in runs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"configs with keys {repeated} repeat; each run would execute twice")
    for cfg in runs:
        check_supported(cfg)
        cfg.validate()
    return runs


def server_app(cfgs: Configs = None, out: dict[str, Any] | None = None, server_data: bool = False) -> ServerApp:
    """A Flower ServerApp that runs ``cfgs`` one after another on the same federation (one config or a sweep; None:
    the run config's, :func:`config_from_run_config`). The records go into ``out["records"]`` when given, and to
    ``<out>/<method>-flower-<key>.json`` when the run config names a folder ``out``. ``server_data`` (or the run
    config's ``server-data``) lets the server build the data, for the methods whose server step reads it."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: FlowerContext) -> None:
        runs = _as_list(cfgs if cfgs is not None else config_from_run_config(context.run_config))
        nodes = _discover(grid, runs[0])
        records = []
        for cfg in runs:
            reads = server_data or bool(context.run_config.get("server-data", False))
            record = serve(cfg, _grid_send(grid, nodes), len(nodes), reads)
            records.append(record)
            summary = record.get("summary", {})
            if summary:
                acc, best = summary["test_acc"], summary["best_round"]
                log.info("%s (seed %d): test acc %.4f at round %s", cfg.method, cfg.seed, acc, best)
            folder = str(context.run_config.get("out", "") or "")
            if folder:
                path = Path(folder) / f"{cfg.method}-flower-{cfg.key()}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(record, allow_nan=True))
                log.info("record written to %s", path)
        if out is not None:
            out["records"] = records

    return app


def num_nodes(cfg: ExperimentConfig) -> int:
    """Number of Flower nodes (SuperNodes) a run of ``cfg`` needs: one per client of its data."""
    return build_federated(cfg.data_spec(), seed=cfg.seed).num_clients


def run_flower(
    cfgs: ExperimentConfig | Sequence[ExperimentConfig],
    num_cpus: float = 1.0,
    ray_init: Mapping[str, Any] | None = None,
    server_data: bool = False,
) -> list[dict[str, Any]]:
    """Run ``cfgs`` through Flower's simulation engine (``flwr.simulation.run_simulation`` on its Ray backend, each
    ClientApp with ``num_cpus``): one simulation, the runs one after another on the same nodes; returns their records
    (see :func:`serve`), each with ``simulation_s``, the wall time of the whole simulation (Ray's start included).
    Ray starts as pflnb's Ray executor starts it (:func:`pflnb.experiments.ray_backend.connect`), unless ``ray_init``
    gives Flower's backend its own ``ray.init`` arguments; an instance this process already has is used as it is."""
    from flwr.simulation import run_simulation

    runs = _as_list(cfgs)
    nodes = {num_nodes(cfg) for cfg in runs}
    if len(nodes) != 1:
        raise ValueError(f"the runs of one simulation need the same number of clients, got {sorted(nodes)}")
    out: dict[str, Any] = {}
    backend = {"client_resources": {"num_cpus": num_cpus, "num_gpus": 0.0}, "init_args": dict(ray_init or {})}
    backend["init_args"].setdefault("logging_level", "ERROR")
    t0 = time.perf_counter()
    if not ray_init:
        # pflnb's local start (its retries when a busy machine makes Ray's start time out); Flower's backend then uses
        # this instance and shuts it down at the end of the simulation
        ray_backend.connect()
    run_simulation(server_app(runs, out, server_data), client_app(), num_supernodes=nodes.pop(), backend_config=backend)
    if "records" not in out:
        raise RuntimeError("the Flower simulation ended without records (see Flower's log above)")
    for record in out["records"]:
        record["simulation_s"] = time.perf_counter() - t0
    return out["records"]


def run_in_process(cfg: ExperimentConfig, server_data: bool = False) -> dict[str, Any]:
    """The apps' server and client steps in this process, without Flower's runtime: every message still travels as
    Flower records (state dicts in ArrayRecords), each client's state in its own RecordDict as in ``context.state``.
    Quick checks (every method) and the cost of the records themselves; :func:`run_flower` runs the real thing."""
    (cfg,) = _as_list(cfg)
    states: dict[int, RecordDict] = {}

    def send(kind: str, contents: dict[int, RecordDict]) -> dict[int, RecordDict]:
        return {cid: handle(kind, cid, c, states.setdefault(cid, RecordDict())) for cid, c in contents.items()}

    return serve(cfg, send, num_nodes(cfg), server_data)


def same_numbers(engine: Mapping[str, Any], flower: Mapping[str, Any], tol: float = 0.0) -> list[str]:
    """Where two records of one config differ (empty: the same numbers): sampled clients and client metrics per round,
    per-client evaluations and the summary; numbers compared to ``tol`` (0: bit for bit)."""
    diffs: list[str] = []

    def cmp(a: Any, b: Any, where: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            if set(a) != set(b):
                diffs.append(f"{where}: keys {sorted(set(a) ^ set(b))} differ")
            for k in sorted(set(a) & set(b)):
                cmp(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                diffs.append(f"{where}: lengths {len(a)} and {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                cmp(x, y, f"{where}[{i}]")
        elif isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
            both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
            if not both_nan and (abs(a - b) > tol if tol else a != b):
                diffs.append(f"{where}: {a!r} != {b!r}")
        elif a != b:
            diffs.append(f"{where}: {a!r} != {b!r}")

    if len(engine["rounds"]) != len(flower["rounds"]):
        diffs.append(f"rounds: {len(engine['rounds'])} and {len(flower['rounds'])}")
    for e, f in zip(engine["rounds"], flower["rounds"]):
        cmp(e["selected"], f["selected"], f"round {e['round']} selected")
        cmp(e["client_metrics"], f["client_metrics"], f"round {e['round']} client_metrics")
    keep = ("round", *EVAL_KEYS)
    cmp([{k: ev[k] for k in keep} for ev in engine["evals"]], [{k: ev[k] for k in keep} for ev in flower["evals"]], "evals")
    cmp(engine.get("summary"), flower.get("summary"), "summary")
    return diffs


__all__ = [
    "ClientSide",
    "FlowerUnsupported",
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
