"""The simulation engine: one round loop for every algorithm (sampling, local work, aggregation,
evaluation, logging, checkpoints)."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from pflnb.data import ClientData, FederatedDataset
from pflnb.fields import check_fields, choice, including, integer, real
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.runner import RUNNERS, BatchedRunner, ClientRunner, LocalWork, make_runner
from pflnb.fl.training import OptimConfig, evaluate
from pflnb.models import PFLModel
from pflnb.progress import tqdm


def derive_seed(*key: int | str) -> int:
    """A 63-bit seed from a tuple of ints and strings (stable across processes and platforms)."""
    ints = [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in key]
    return int(
        np.random.SeedSequence(ints).generate_state(2, dtype=np.uint32).astype(np.uint64)
        @ np.array([1, 1 << 31], dtype=np.uint64)
    ) & ((1 << 63) - 1)


class Context:
    """What hooks may use: the data, a scratch model on the device, local SGD settings, seeded generators."""

    def __init__(
        self,
        data: FederatedDataset,
        model_fn: Callable[[], PFLModel],
        optim: OptimConfig,
        seed: int,
        device: torch.device,
        finetune_epochs: int = 1,
    ) -> None:
        self.data = data
        self.model_fn = model_fn
        self.optim = optim
        self.seed = seed
        self.device = device
        self.finetune_epochs = finetune_epochs
        self.round = 0
        self._scratch: dict[str, PFLModel] = {}
        self.model = self.scratch("main")
        self.head_keys = self.model.head_keys()
        self.body_keys = self.model.body_keys()
        self.bn_keys = self.model.bn_keys()
        self.layers = self.model.layers()

    @property
    def num_clients(self) -> int:
        """Number of clients in federation."""
        return self.data.num_clients

    def client(self, cid: int) -> ClientData:
        """Client ``cid``'s data."""
        return self.data.clients[cid]

    def n_train(self, cid: int) -> int:
        """Size of client ``cid``'s training split."""
        return len(self.data.clients[cid].train)

    def generator(self, *key: int | str) -> torch.Generator:
        """A CPU generator seeded from (seed, round, *key): identical across methods and resumes."""
        return torch.Generator().manual_seed(derive_seed(self.seed, self.round, *key))

    def scratch(self, name: str = "main") -> PFLModel:
        """A reusable model instance on the device (one per name)."""
        if name not in self._scratch:
            self._scratch[name] = self.model_fn().to(self.device)
        return self._scratch[name]

    def load(self, state: S.State, name: str = "main") -> PFLModel:
        """The scratch model ``name`` with ``state`` loaded (a full state dict)."""
        model = self.scratch(name)
        model.load_state_dict(state)
        return model

    def state_of(self, model: nn.Module) -> S.State:
        """A detached copy of ``model``'s state."""
        return S.clone(model.state_dict())


MAX_SEED = 2**32 - 1  # seeds are 32-bit (numpy's generators)


@dataclass(frozen=True)
class Schedule:
    """The rounds of a run: how many, the share of clients sampled each round, how often the clients are evaluated,
    the seed, and the fine-tuning epochs of unseen clients."""

    rounds: int = integer(30, 1)
    participation: float = real(1.0, 0.0, 1.0, low_open=True)
    eval_every: int = integer(1, 1)
    seed: int = integer(0, 0, MAX_SEED)
    finetune_epochs: int = integer(1, 0)


@dataclass
@including(Schedule)
class RunSettings:
    """Engine settings of one run: its :class:`Schedule`'s fields, the local optimizer, and how the run executes."""

    optim: OptimConfig = field(default_factory=OptimConfig)
    checkpoint_every: int = 0
    checkpoint_path: str | None = None
    progress: bool = True
    device: str | None = None
    stop_after: int | None = None  # stop (as if interrupted) after this round; for tests of resume
    checkpoint_tag: str | None = None  # stored in checkpoints; a checkpoint with another tag is refused (config hash)
    runner: str = choice("auto", RUNNERS, "client runner: auto (batched on CUDA where supported), sequential, batched, stacked")

    def validate(self) -> None:
        """Raise ValueError for settings that cannot run (each field's declared values, the optimizer's too)."""
        check_fields(self)
        self.optim.validate()


def sample_clients(ctx: Context, participation: float) -> list[int]:
    """The sorted ids of this round's clients: max(1, round(participation·N)) drawn without replacement."""
    n = ctx.num_clients
    k = max(1, math.floor(participation * n + 0.5))
    if k >= n:
        return list(range(n))
    gen = ctx.generator("sample")
    perm = torch.randperm(n, generator=gen, device=gen.device)
    return sorted(perm[:k].tolist())


def initial_state(model_fn: Callable[[], PFLModel], seed: int, device: torch.device) -> S.State:
    """The initial model state of a run: ``model_fn()`` built under the seed (seed, "init"), on ``device`` (the
    global torch generator is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "init"))
        init_model = model_fn()
    return S.to(S.clone(init_model.state_dict()), device)


def begin_round(ctx: Context, optim: OptimConfig, t: int) -> None:
    """Set ``ctx`` to round ``t`` (1-based): its round (which seeds every generator) and the local optimizer settings."""
    ctx.round = t
    ctx.optim = optim.at_round(t)


def is_eval_round(settings: RunSettings, t: int) -> bool:
    """Whether round ``t`` ends with an evaluation of every client (every ``eval_every`` rounds and the last)."""
    return t % settings.eval_every == 0 or t == settings.rounds


def server_step(algorithm: Algorithm, ctx: Context, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict:
    """The server's step of a round: the method's aggregation of the sampled clients' messages (keyed by client id)."""
    return algorithm.aggregate(ctx, server, messages)


def _evaluate_unseen(algorithm: Algorithm, ctx: Context, server: dict) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"before": [], "after": []}
    for data in ctx.data.unseen:
        for when, finetune in (("before", False), ("after", True)):
            module = algorithm.unseen_module(ctx, server, data, finetune)
            out[when].append(evaluate(module, data.test)["acc"])
    return out


def to_jsonable(x: Any) -> Any:
    """Tensors, arrays and numpy scalars inside dicts and lists turned into plain Python values."""
    if isinstance(x, torch.Tensor):
        return x.item() if x.numel() == 1 else x.tolist()
    if isinstance(x, np.ndarray):
        return x.item() if x.size == 1 else x.tolist()
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def summarize(record: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers: client-mean test accuracy at the best mean-validation round and at the last round."""
    evals = record["evals"]
    if not evals:
        return {}
    val_means = [float(np.mean(e["val_acc"])) for e in evals]
    best = int(np.argmax(val_means))
    e_best, e_last = evals[best], evals[-1]
    test_best = np.asarray(e_best["test_acc"])
    return {
        "best_round": e_best["round"],
        "best_val_acc": val_means[best],
        "test_acc": float(test_best.mean()),
        "test_acc_worst": float(test_best.min()),
        "test_acc_client_std": float(test_best.std()),
        "test_acc_clients": test_best.tolist(),
        "last_round": e_last["round"],
        "last_test_acc": float(np.mean(e_last["test_acc"])),
    }


def _save_checkpoint(path: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` through a unique temporary file in the same folder and an atomic replace."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def _load_checkpoint(path: str, device: torch.device, tag: str | None) -> dict[str, Any] | None:
    """The checkpoint at ``path`` (None if there is none); ValueError naming the file if it is unreadable or
    belongs to another config."""
    try:
        payload = torch.load(path, map_location=device, weights_only=False)
    except FileNotFoundError:  # removed by a concurrent identical run that finished
        return None
    except Exception as e:  # noqa: BLE001 - truncated or corrupt file
        raise ValueError(
            f"checkpoint {path} is unreadable ({type(e).__name__}: {e}); delete it or re-run with --force (starts from scratch)"
        ) from e
    if not isinstance(payload, dict) or not {"round", "server", "clients", "record"} <= set(payload):
        raise ValueError(f"checkpoint {path} is not a pflnb checkpoint; delete it or re-run with --force")
    if tag is not None and payload.get("tag") != tag:
        raise ValueError(
            f"checkpoint {path} belongs to another config (hash {payload.get('tag')!r}, expected {tag!r}); "
            "delete it or re-run with --force"
        )
    return payload


def _tensor_leaves(value: Any, where: str = ""):
    """(path, tensor) for every floating tensor inside nested dicts, lists and tuples (Python floats in states are
    bookkeeping, e.g. NaN placeholders, and are not checked)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.numel():
            yield where, value
    elif isinstance(value, dict | list | tuple):
        for k, v in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _tensor_leaves(v, f"{where}.{k}" if where else str(k))


def check_messages(round_: int, updates: dict[int, ClientUpdate]) -> dict | None:
    """Before the server step: None if this round's training losses and the messages the clients send are finite;
    otherwise where divergence showed first (as :func:`check_finite`). A server step fed a non-finite message may
    raise instead of diverging (FedMGDA+'s least squares: 'SVD did not converge'), so the run stops here, recorded as
    diverged, not failed."""
    return check_finite(round_, updates, {}, [], messages=True)


def check_finite(
    round_: int, updates: dict[int, ClientUpdate], server: dict[str, Any], clients: list[dict], messages: bool = False
) -> dict | None:
    """None if this round's training losses (metrics named ``*loss*``), the updated client states and the server
    state are finite; otherwise where divergence showed first: round, client (None: the server), quantity, value."""
    for cid, up in updates.items():
        for name, v in up.metrics.items():
            if "loss" in name and isinstance(v, float | int | torch.Tensor) and not math.isfinite(float(v)):
                return {"round": round_, "client": cid, "quantity": f"train metric {name}", "value": str(float(v))}
    if messages:  # the messages the clients send (before the server step reads them)
        parts = [(cid, "message", up.message) for cid, up in updates.items()]
    else:
        parts = [(cid, "client state", clients[cid]) for cid in updates] + [(None, "server state", server)]
    # A finite sum has no NaN or ±inf among its terms, and a sum reads its tensor once (an element-wise test writes
    # and reads a mask besides: 20x the time on FedPG's 160 MB bank of gradients); a non-finite sum (a NaN or ±inf
    # term, or finite terms whose sum overflows) sends the search below to the element-wise test, which decides.
    flags: dict[torch.device, list[torch.Tensor]] = {}
    for _, _, value in parts:
        for _, t in _tensor_leaves(value):
            flags.setdefault(t.device, []).append(t.sum().isfinite())
    if all(bool(torch.stack(f).all()) for f in flags.values()):  # one device sync per device
        return None
    for cid, what, value in parts:
        for where, t in _tensor_leaves(value):
            if not bool(torch.isfinite(t).all()):
                bad = t[~torch.isfinite(t)].flatten()[0].item()
                return {"round": round_, "client": cid, "quantity": f"{what} {where}", "value": str(bad)}
    return None


def run_simulation(
    algorithm: Algorithm,
    data: FederatedDataset,
    model_fn: Callable[[], PFLModel],
    settings: RunSettings,
    runner: ClientRunner | str | None = None,
) -> dict[str, Any]:
    """Run federated training and return the run record (JSON-serializable dict): :func:`simulate`'s round loop,
    each round's local work done by the run's client runner."""
    return drive(simulate(algorithm, data, model_fn, settings, runner))


Simulation = Generator[LocalWork, dict[int, ClientUpdate], dict[str, Any]]


def drive(run: Simulation, runner: ClientRunner | None = None) -> dict[str, Any]:
    """The record of one :func:`simulate` loop, its local work done by ``runner`` (default: the run's own)."""
    try:
        work = next(run)
        while True:
            work = run.send((runner or work.runner).run(work.algorithm, work.ctx, work.server, work.clients, work.selected))
    except StopIteration as stop:
        return stop.value


def run_stacked(runs: Sequence[Simulation], runner: BatchedRunner | None = None) -> list[dict[str, Any]]:
    """The records of several :func:`simulate` loops advanced in lock-step: in every round the local work of all of
    them is trained by one batched call (:meth:`~pflnb.fl.runner.BatchedRunner.run_works`: run × client rows, each
    with its own data, generators and learning rate). Sampling, the server step and evaluation stay each run's own.
    Each record equals the run's :func:`run_simulation` record (float64: to rounding) and names the stacked runner."""
    runner = BatchedRunner() if runner is None else runner
    records: list[dict[str, Any] | None] = [None] * len(runs)
    pending: dict[int, LocalWork] = {}
    for i, run in enumerate(runs):
        try:
            pending[i] = next(run)
        except StopIteration as stop:  # a resumed run with nothing left to train
            records[i] = stop.value
    while pending:
        order = sorted(pending)
        updates = runner.run_works([pending[i] for i in order])
        for i, up in zip(order, updates):
            try:
                pending[i] = runs[i].send(up)
            except StopIteration as stop:
                records[i] = stop.value
                del pending[i]
    for record in records:
        if record is not None and "runner" in record:
            notes = list(dict.fromkeys(record["runner"]["notes"] + runner.notes))
            record["runner"] = {"name": "stacked", "eval": record["runner"]["name"], "notes": notes}
    return records  # type: ignore[return-value]


class Clients:
    """The clients as :func:`simulate`'s one round loop reaches them: the seam between the loop and where the clients'
    states live and how messages reach them.

    These live in this process (the engine's simulation): a round's updates replace them, the method's
    ``after_aggregate`` runs on them, their states are checked for divergence, the client runner evaluates them, and
    the record gets what reads them (``local``: the method's internals and extra metrics, checkpoints, held-out
    clients, the final states). :class:`pflnb.flower.FlowerClients` keeps them on Flower's clients instead and reaches
    them by messages; the loop is the same."""

    local = True

    def __init__(self) -> None:
        self.states: list[dict[str, Any]] = []

    def start(self, states: list[dict[str, Any]]) -> None:
        """The clients' states at the start (the method's ``init``, or a checkpoint's)."""
        self.states = states

    def receive(self, updates: dict[int, ClientUpdate]) -> None:
        """A round's local work is done: each trained client's new state."""
        for cid, up in updates.items():
            self.states[cid] = up.client

    def after_aggregate(self, algorithm: Algorithm, ctx: Context, server: dict[str, Any], selected: list[int]) -> None:
        """The method's step on each sampled client after the server step (LG-Mix's mixing)."""
        for cid in selected:
            self.states[cid] = algorithm.after_aggregate(ctx, cid, server, self.states[cid])

    def check(self, round_: int, updates: dict[int, ClientUpdate], server: dict[str, Any]) -> dict | None:
        """Where the round diverged first (:func:`check_finite`), or None."""
        return check_finite(round_, updates, server, self.states)

    def evaluate(self, runner: ClientRunner, algorithm: Algorithm, ctx: Context, server: dict[str, Any]) -> dict[str, Any]:
        """Every client's val and test accuracy and loss (lists by client id)."""
        return runner.evaluate(algorithm, ctx, server, self.states)


def simulate(
    algorithm: Algorithm,
    data: FederatedDataset,
    model_fn: Callable[[], PFLModel],
    settings: RunSettings,
    runner: ClientRunner | str | None = None,
    clients: Clients | None = None,
) -> Simulation:
    """The round loop of one run, as a generator: it yields each round's :class:`~pflnb.fl.runner.LocalWork` (with
    ``runner``, the run's client runner, attached) and is sent back the updates; it returns the run record.

    The record holds per-round sampled clients, per-client train metrics, method internals and timings
    (``rounds``), per-client val/test accuracy and loss on evaluation rounds (``evals``), held-out
    clients before/after fine-tuning (``unseen``), a ``summary`` and ``wall_time_s`` (summed over resumes).
    With ``checkpoint_every`` and a ``checkpoint_path``, state is saved every k rounds and an existing checkpoint
    is resumed (refused, naming the file, when unreadable or tagged with another ``checkpoint_tag``).
    A round whose training metrics or states hold a non-finite value ends the run: the record then has a
    ``divergence`` entry (round, client, quantity) instead of a summary, and no final states. Local training
    and evaluation go through ``runner`` (default: ``settings.runner``, see :func:`pflnb.fl.runner.make_runner`).
    ``clients``: where the clients' states live and how the loop reaches them (:class:`Clients`, the default: in this
    process; Flower's server passes its own).
    """
    settings.validate()
    device = torch.device(settings.device) if settings.device else torch.device("cpu")
    data = data.to(device)
    init_state = initial_state(model_fn, settings.seed, device)
    ctx = Context(data, model_fn, settings.optim, settings.seed, device, settings.finetune_epochs)
    runner = make_runner(settings.runner if runner is None else runner, algorithm, device, ctx.model)
    fed = Clients() if clients is None else clients
    server, states = algorithm.init(ctx, init_state)
    fed.start(states)
    record: dict[str, Any] = {
        "method": algorithm.name,
        "clients": [c.name for c in data.clients],
        "domains": [c.domain for c in data.clients],
        "rounds": [],
        "evals": [],
        "unseen": {},
    }
    start_round, t_start, earlier_s = 1, time.perf_counter(), 0.0
    ckpt = settings.checkpoint_path
    payload = _load_checkpoint(ckpt, device, settings.checkpoint_tag) if ckpt and os.path.exists(ckpt) else None
    if payload is not None:
        server, record = payload["server"], payload["record"]
        fed.start(payload["clients"])
        start_round, earlier_s = payload["round"] + 1, float(payload.get("wall_time_s", 0.0))

    bar = tqdm(range(start_round, settings.rounds + 1), desc=algorithm.name, disable=not settings.progress, leave=False)
    for t in bar:
        begin_round(ctx, settings.optim, t)
        t0 = time.perf_counter()
        selected = sample_clients(ctx, settings.participation)
        updates = yield LocalWork(algorithm, ctx, server, fed.states, selected, runner)
        t1 = time.perf_counter()
        fed.receive(updates)
        divergence = check_messages(t, updates)
        if divergence is not None:  # a non-finite message: the server step would read it (and may raise)
            record["divergence"] = divergence
            record["wall_time_s"] = earlier_s + time.perf_counter() - t_start
            return record
        server = server_step(algorithm, ctx, server, {cid: up.message for cid, up in updates.items()})
        fed.after_aggregate(algorithm, ctx, server, selected)
        divergence = fed.check(t, updates, server)
        if divergence is not None:  # stop: nothing after a non-finite loss or state is a result
            record["divergence"] = divergence
            record["wall_time_s"] = earlier_s + time.perf_counter() - t_start
            return record
        t2 = time.perf_counter()
        entry: dict[str, Any] = {
            "round": t,
            "selected": selected,
            "client_metrics": {cid: up.metrics for cid, up in updates.items()},
            "internals": algorithm.round_internals(ctx, server, fed.states) if fed.local else {},
        }
        if is_eval_round(settings, t):
            ev = fed.evaluate(runner, algorithm, ctx, server)
            extra = algorithm.extra_metrics(ctx, server, fed.states) if fed.local else {}
            record["evals"].append(to_jsonable({"round": t, **ev, **({"extra": extra} if extra else {})}))
            bar.set_postfix(val=f"{np.mean(ev['val_acc']):.3f}", test=f"{np.mean(ev['test_acc']):.3f}")
        t3 = time.perf_counter()
        entry["time"] = {"local": t1 - t0, "aggregate": t2 - t1, "eval": t3 - t2}
        record["rounds"].append(to_jsonable(entry))
        if ckpt and fed.local and settings.checkpoint_every and (t % settings.checkpoint_every == 0):
            elapsed = earlier_s + time.perf_counter() - t_start
            payload = {"round": t, "server": server, "clients": fed.states, "record": record, "wall_time_s": elapsed}
            _save_checkpoint(ckpt, {**payload, "tag": settings.checkpoint_tag})
        if settings.stop_after is not None and t >= settings.stop_after and t < settings.rounds:
            record["interrupted_at"] = t
            return record
    record.pop("interrupted_at", None)
    if data.unseen and fed.local:
        ctx.optim = settings.optim.at_round(settings.rounds)
        record["unseen"] = _evaluate_unseen(algorithm, ctx, server)
    record["summary"] = summarize(record)
    if fed.local:
        record["runner"] = {"name": runner.name, "notes": list(getattr(runner, "notes", []))}
        record["final"] = {"server": server, "clients": fed.states}
    record["wall_time_s"] = earlier_s + time.perf_counter() - t_start  # over every resumed segment
    return record
