"""The ServerApp: the engine's one round loop (:func:`~pflnb.fl.engine.simulate`) with the clients reached by
Flower messages (:class:`FlowerClients`), the apps run in Flower's simulation engine or in this process, and a
comparison of two records' numbers."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pflnb.algorithms import make_algorithm
from pflnb.data import build_federated
from pflnb.experiments import ray_backend
from pflnb.experiments.config import ExperimentConfig
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.engine import (
    Clients,
    Context,
    RunSettings,
    check_finite,
    simulate,
)
from pflnb.fl.runner import ClientRunner, LocalWork
from pflnb.flower.client import client_app, handle
from pflnb.flower.messages import (
    AFTER_AGGREGATE,
    EVAL_KEYS,
    REPLY_TIMEOUT,
    ConfigRecord,
    FlowerContext,
    FlowerUnsupported,
    Grid,
    Message,
    RecordDict,
    ServerApp,
    _merge,
    check_supported,
    config_from_run_config,
    log,
    pack,
    unpack,
)
from pflnb.models import build_model

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
