"""The ClientApp: each client's steps (query, train, after_aggregate, evaluate) through the engine's client runner,
its state kept in Flower's ``context.state`` between rounds."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import FederatedDataset, build_federated
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.jobs import thread_limits
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.engine import (
    Context,
    begin_round,
    check_finite,
    initial_state,
    to_jsonable,
)
from pflnb.fl.runner import ClientRunner, make_runner
from pflnb.flower.messages import (
    AFTER_AGGREGATE,
    EVAL_KEYS,
    STATE,
    ClientApp,
    ConfigRecord,
    FlowerContext,
    Message,
    MetricRecord,
    RecordDict,
    _merge,
    _numbers,
    pack,
    unpack,
)
from pflnb.models import build_model

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
