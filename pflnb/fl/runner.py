"""Client runners: the one seam through which the engine trains the sampled clients and evaluates all clients.

:class:`ClientRunner` is the interface the engine types against. :class:`SequentialRunner` calls the algorithm's
hooks client after client (``local_train``, ``eval_module``). :class:`BatchedRunner` executes the algorithm's
declared local plans (``local_plan`` → ``finish_local``) and evaluation plans (``eval_plan``) for many clients
at once with torch.func (:mod:`pflnb.fl.batched`): plans of equal signature form a group, a group is split
into chunks that fit the device's free memory, and the results equal the sequential runner's (tested in float64).
:meth:`BatchedRunner.run_works` does the same for the clients of several runs at once (stacked runs: run × client
rows, each with its own context, learning rate and per-row hyperparameters; :func:`pflnb.fl.engine.run_stacked`).
What it cannot batch (an algorithm whose ``local_train`` or ``eval_module`` is not described by its plan, a model
with dropout) it hands to the sequential path, with a one-line note logged once per runner.

``make_runner("auto")`` picks the batched runner on CUDA when the algorithm declares a batchable plan, the
sequential runner otherwise (on a CPU batching is slower: one vmapped kernel does the same arithmetic).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from pflnb.fl import batched as B
from pflnb.fl import evaluation as EV
from pflnb.fl import functional as FN
from pflnb.fl import grouping as G
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.training import evaluate

RUNNERS = ("auto", "sequential", "batched", "stacked")  # stacked: batched, and a sweep's runs trained together
log = logging.getLogger("pflnb.runner")


@dataclass
class LocalWork:
    """One run's local work in a round, as the engine's round loop asks for it: train the ``selected`` clients of
    ``algorithm`` from ``server`` and ``clients`` in context ``ctx`` (see :func:`pflnb.fl.engine.simulate`);
    ``runner``: the run's own client runner, which does it when the run is driven alone."""

    algorithm: Algorithm
    ctx: Any
    server: dict[str, Any]
    clients: list[dict[str, Any]]
    selected: list[int]
    runner: Any = None


@runtime_checkable
class ClientRunner(Protocol):
    """Trains the sampled clients of a round and evaluates every client."""

    name: str

    def run(
        self, algorithm: Algorithm, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]], selected: list[int]
    ) -> dict[int, ClientUpdate]:
        """Local work of every selected client, keyed by client id (in ``selected`` order)."""
        ...

    def evaluate(
        self,
        algorithm: Algorithm,
        ctx: Any,
        server: dict[str, Any],
        clients: list[dict[str, Any]],
        cids: Sequence[int] | None = None,
    ) -> dict[str, list[float]]:
        """Per-client ``val_acc``, ``test_acc``, ``val_loss``, ``test_loss`` lists (client order; of ``cids`` when
        given, else of every client)."""
        ...


class SequentialRunner:
    """Trains the sampled clients one after another and evaluates them one after another."""

    name = "sequential"

    def __init__(self) -> None:
        self.notes: list[str] = []

    def run(
        self, algorithm: Algorithm, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]], selected: list[int]
    ) -> dict[int, ClientUpdate]:
        """Local work of every selected client, keyed by client id."""
        return {cid: algorithm.local_train(ctx, cid, server, clients[cid]) for cid in selected}

    def evaluate(
        self,
        algorithm: Algorithm,
        ctx: Any,
        server: dict[str, Any],
        clients: list[dict[str, Any]],
        cids: Sequence[int] | None = None,
    ) -> dict[str, list[float]]:
        """Accuracy and loss on val and test of every client's (or each of ``cids``') ``eval_module``."""
        out: dict[str, list[float]] = {"val_acc": [], "test_acc": [], "val_loss": [], "test_loss": []}
        for cid in range(ctx.num_clients) if cids is None else cids:
            module = algorithm.eval_module(ctx, cid, server, clients[cid])
            data = ctx.client(cid)
            for split in ("val", "test"):
                r = evaluate(module, data.split(split))
                out[f"{split}_acc"].append(r["acc"])
                out[f"{split}_loss"].append(r["loss"])
        return out


def _definer(cls: type, name: str) -> type:
    return next(k for k in cls.__mro__ if name in k.__dict__)


def _plan_gap(algorithm: Algorithm, plan_hook: str, direct_hooks: tuple[str, ...]) -> str | None:
    """Why ``plan_hook`` does not describe what the sequential path runs (None when it does): a direct hook
    overridden in a subclass of the class that declares the plan bypasses the plan."""
    cls = type(algorithm)
    plan_cls = _definer(cls, plan_hook)
    for hook in direct_hooks:
        d = _definer(cls, hook)
        if d is not plan_cls and d is not Algorithm and issubclass(d, plan_cls):
            return f"{d.__name__} overrides {hook} without declaring {plan_hook}"
    return None


def local_plan_gap(algorithm: Algorithm) -> str | None:
    """Why the batched runner cannot train ``algorithm``'s clients (None when it can)."""
    if _definer(type(algorithm), "local_plan") is Algorithm:
        return f"{type(algorithm).__name__} declares no local plan"
    return _plan_gap(algorithm, "local_plan", ("local_train",))


def eval_plan_gap(algorithm: Algorithm) -> str | None:
    """Why the batched runner cannot evaluate ``algorithm``'s clients (None when it can)."""
    return _plan_gap(algorithm, "eval_plan", ("eval_module",))


class BatchedRunner:
    """Trains and evaluates clients together with torch.func (see the module docstring).

    ``cpu_chunk``: clients per chunk on devices without a memory query (CPU); ``memory_fraction``: the share of
    the free CUDA memory a chunk may take (chunks halve and retry on an out-of-memory error).
    """

    name = "batched"

    def __init__(self, cpu_chunk: int = 16, memory_fraction: float = 0.6) -> None:
        if cpu_chunk < 1:
            raise ValueError(f"cpu_chunk must be >= 1, got {cpu_chunk}")
        if not 0.0 < memory_fraction <= 1.0:
            raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction}")
        self.cpu_chunk, self.memory_fraction = cpu_chunk, memory_fraction
        self.notes: list[str] = []
        self.sequential = SequentialRunner()
        self._fm: dict[tuple, FN.FunctionalModel] = {}
        self._arch: dict[int, tuple[Any, tuple]] = {}  # id(ctx) -> (ctx, architecture); the ctx kept so ids stay unique
        self._bytes: dict[tuple, int] = {}

    # ---- bookkeeping --------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        """Log ``text`` once per runner (one run)."""
        if text not in self.notes:
            self.notes.append(text)
            log.warning("batched runner: %s", text)

    def functional_model(self, ctx: Any) -> FN.FunctionalModel:
        """The functional copy of the context's model (built once per architecture: runs of one architecture share it,
        since the state is passed on every call)."""
        key = self.architecture(ctx)
        if key not in self._fm:
            self._fm[key] = FN.FunctionalModel(ctx.model)
        return self._fm[key]

    def architecture(self, ctx: Any) -> tuple:
        """What plans of several runs must share to train in one batch besides their plan signature: the model's
        structure (its repr), its state's names, shapes and dtypes, and the device (computed once per context)."""
        entry = self._arch.get(id(ctx))
        if entry is None or entry[0] is not ctx:
            model = ctx.model
            shapes = tuple((k, tuple(v.shape), str(v.dtype)) for k, v in model.state_dict().items())
            entry = self._arch[id(ctx)] = (ctx, (repr(model), shapes, str(ctx.device)))
        return entry[1]

    def per_client_bytes(self, ctx: Any, batch: int, n_max: int, train: bool) -> int:
        """A conservative estimate of one client's memory in a chunk: states (parameters, gradients, optimizer
        state, copies), its padded data, and the activations of a batch (measured once on a 2-sample batch)."""
        key = (id(ctx), batch, n_max, train)
        if key not in self._bytes:
            model = ctx.model
            state = sum(t.numel() * t.element_size() for t in model.state_dict().values())
            split = ctx.client(0).train
            sample = split.x[:1].numel() * split.x.element_size()
            act = _activation_bytes(model, split.x[:2]) / 2
            copies = 6 if train else 1
            self._bytes[key] = int(copies * state + n_max * sample + (4 if train else 2) * act * batch) + 1
        return self._bytes[key]

    def chunk_size(self, ctx: Any, n: int, per_client: int) -> int:
        """Clients per chunk: what fits ``memory_fraction`` of the free CUDA memory, else ``cpu_chunk``."""
        if ctx.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(ctx.device)
            return max(1, min(n, int(self.memory_fraction * free // per_client)))
        return min(n, self.cpu_chunk)

    def _chunks(self, ctx: Any, items: list, batch: int, n_max: int, train: bool, fn) -> list:
        """``fn(chunk)`` over chunks of ``items``, halving the chunk on a CUDA out-of-memory error."""
        size = self.chunk_size(ctx, len(items), self.per_client_bytes(ctx, batch, n_max, train))
        out, start = [], 0
        while start < len(items):
            chunk = items[start : start + size]
            try:
                out.append(fn(chunk))
            except torch.cuda.OutOfMemoryError:
                if size == 1:
                    raise
                size = max(1, size // 2)
                self.memory_fraction /= 2
                torch.cuda.empty_cache()
                continue
            start += len(chunk)
        return out

    # ---- local training -----------------------------------------------------------------------------
    def run(
        self, algorithm: Algorithm, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]], selected: list[int]
    ) -> dict[int, ClientUpdate]:
        """Local work of every selected client: declared plans batched by group, the rest sequentially."""
        return self.run_works([LocalWork(algorithm, ctx, server, clients, selected)])[0]

    def run_works(self, works: Sequence[LocalWork]) -> list[dict[int, ClientUpdate]]:
        """The local work of several runs' rounds, keyed by client id per run: every declared plan of every run goes
        into one pool, plans of equal signature and model architecture train together (run × client rows, each with
        its own context, data, generators and learning rate), the rest sequentially."""
        plans: list[dict[int, Any]] = []
        updates: list[dict[int, ClientUpdate]] = [{} for _ in works]
        groups: dict[tuple, list[tuple[int, Any]]] = defaultdict(list)
        for w, work in enumerate(works):
            algorithm, ctx = work.algorithm, work.ctx
            reason = local_plan_gap(algorithm) or FN.unsupported_model(ctx.model)
            if reason:
                self.note(f"local training of {algorithm.name or type(algorithm).__name__} runs sequentially: {reason}")
                updates[w] = self.sequential.run(algorithm, ctx, work.server, work.clients, work.selected)
                plans.append({})
                continue
            plans.append({cid: algorithm.local_plan(ctx, cid, work.server, work.clients[cid]) for cid in work.selected})
            for plan in plans[w].values():
                if plan is not None:
                    groups[(self.architecture(ctx), G.plan_signature(plan))].append((w, plan))
        results: dict[tuple[int, int], Any] = {}
        for rows in groups.values():
            results.update(self._run_group(works, rows))
        for w, work in enumerate(works):
            for cid, plan in plans[w].items():
                algorithm, ctx = work.algorithm, work.ctx
                if plan is None:
                    self.note(f"{algorithm.name}: a client without a local plan runs sequentially")
                    updates[w][cid] = algorithm.local_train(ctx, cid, work.server, work.clients[cid])
                else:
                    updates[w][cid] = algorithm.finish_local(ctx, cid, work.server, work.clients[cid], plan, results[(w, cid)])
        return updates

    def _run_group(self, works: Sequence[LocalWork], rows: list[tuple[int, Any]]) -> dict[tuple[int, int], Any]:
        """The plan results of one group's rows (work index, plan), keyed by (work index, client id)."""
        rows = sorted(rows, key=lambda r: -len(works[r[0]].ctx.client(r[1].cid).split(r[1].split)))  # similar step counts
        ctx = works[rows[0][0]].ctx
        fm = self.functional_model(ctx)
        first = rows[0][1]
        batch = max([p.batch_size or p.optim.batch_size for p in first.phases], default=1)
        n_max = max(len(works[w].ctx.client(p.cid).split(p.split)) for w, p in rows)
        slots = list(first.models)

        def run(chunk: list) -> dict[tuple[int, int], Any]:
            res = B.run_chunk(ctx, fm, [p for _, p in chunk], [works[w].ctx for w, _ in chunk])
            return {(w, p.cid): res.plan_result(i, slots) for i, (w, p) in enumerate(chunk)}

        out: dict[tuple[int, int], Any] = {}
        for part in self._chunks(ctx, rows, batch, n_max, True, run):
            out.update(part)
        return out

    # ---- evaluation ---------------------------------------------------------------------------------
    def evaluate(
        self,
        algorithm: Algorithm,
        ctx: Any,
        server: dict[str, Any],
        clients: list[dict[str, Any]],
        cids: Sequence[int] | None = None,
    ) -> dict[str, list[float]]:
        """Accuracy and loss on val and test of every client (or of ``cids``), evaluation plans batched (fine-tuning
        included)."""
        reason = eval_plan_gap(algorithm) or FN.unsupported_model(ctx.model)
        if reason:
            self.note(f"evaluation of {algorithm.name or type(algorithm).__name__} runs sequentially: {reason}")
            return self.sequential.evaluate(algorithm, ctx, server, clients, cids)
        order = list(range(ctx.num_clients)) if cids is None else list(cids)
        plans = [algorithm.eval_plan(ctx, cid, server, clients[cid]) for cid in order]
        rows: dict[int, dict[str, float]] = {}
        groups: dict[tuple, list] = defaultdict(list)
        for cid, plan in zip(order, plans):
            if plan is None:
                self.note(f"{algorithm.name}: a client without an evaluation plan is evaluated sequentially")
                rows.update(self._eval_sequential(algorithm, ctx, server, clients, cid))
            else:
                groups[G.plan_signature(plan)].append(plan)
        fm = self.functional_model(ctx)
        for group in groups.values():
            group.sort(key=lambda p: -max(len(ctx.client(p.cid).val), len(ctx.client(p.cid).test)))  # less padding
            fused = group[0].fuse != ("main",)
            if not fused and not group[0].phases and all(p.models["main"] is group[0].models["main"] for p in group):
                rows.update(self._eval_shared(ctx, fm, group))
                continue
            n_eval = max(max(len(ctx.client(p.cid).val), len(ctx.client(p.cid).test)) for p in group)
            n_max = max(n_eval, max(len(ctx.client(p.cid).split(p.split)) for p in group))
            batch = max([p.optim.batch_size for p in group[0].phases], default=min(n_eval, EV.eval_block(ctx.device)))
            for part in self._chunks(ctx, group, batch, n_max, bool(group[0].phases), lambda ch: self._eval_chunk(ctx, fm, ch)):
                rows.update(part)
        keys = ("val_acc", "test_acc", "val_loss", "test_loss")
        return {k: [rows[c][k] for c in order] for k in keys}

    def _eval_chunk(self, ctx: Any, fm: FN.FunctionalModel, plans: list) -> dict[int, dict[str, float]]:
        log_weights = torch.stack([p.values[p.mix] for p in plans]) if plans[0].mix else None
        if plans[0].fuse != ("main",):
            stacked = [FN.stack_states([p.models[s] for p in plans], fm.state_keys) for s in plans[0].fuse]
        elif plans[0].phases:
            stacked = B.run_chunk(ctx, fm, plans).models["main"]
        else:
            stacked = FN.stack_states([p.models["main"] for p in plans], fm.state_keys)
        out: dict[int, dict[str, float]] = {p.cid: {} for p in plans}
        for split in ("val", "test"):
            splits = [ctx.client(p.cid).split(split) for p in plans]
            with fm.attrs(plans[0].model_attrs):
                block = EV.eval_block(ctx.device, len(plans))
                res = EV.evaluate_stacked(fm, stacked, False, splits, block, plans[0].fuse_reduction, log_weights)
            for p, r in zip(plans, res):
                out[p.cid][f"{split}_acc"], out[p.cid][f"{split}_loss"] = r["acc"], r["loss"]
        return out

    def _eval_shared(self, ctx: Any, fm: FN.FunctionalModel, plans: list) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {p.cid: {} for p in plans}
        for split in ("val", "test"):
            splits = [ctx.client(p.cid).split(split) for p in plans]
            with fm.attrs(plans[0].model_attrs):
                res = EV.evaluate_shared(fm, plans[0].models["main"], splits, EV.eval_block(ctx.device))
            for p, r in zip(plans, res):
                out[p.cid][f"{split}_acc"], out[p.cid][f"{split}_loss"] = r["acc"], r["loss"]
        return out

    def _eval_sequential(self, algorithm: Algorithm, ctx: Any, server: dict, clients: list, cid: int) -> dict[int, dict]:
        module = algorithm.eval_module(ctx, cid, server, clients[cid])
        row = {}
        for split in ("val", "test"):
            r = evaluate(module, ctx.client(cid).split(split))
            row[f"{split}_acc"], row[f"{split}_loss"] = r["acc"], r["loss"]
        return {cid: row}


def _activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """Bytes of every module output in one forward pass of ``model`` on ``x`` (eval mode, no gradients)."""
    total = 0

    def hook(_m: nn.Module, _i: Any, out: Any) -> None:
        nonlocal total
        if isinstance(out, torch.Tensor):
            total += out.numel() * out.element_size()

    was_training = model.training
    handles = [m.register_forward_hook(hook) for m in model.modules() if m is not model]
    try:
        with torch.no_grad():
            model.eval()
            model(x)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return max(total, 1)


def batch_support(algorithm: Algorithm, model: nn.Module) -> str | None:
    """Why ``runner="auto"`` would not batch ``algorithm`` with ``model`` (None when it would)."""
    return FN.unsupported_model(model) or local_plan_gap(algorithm)


def make_runner(runner: str | ClientRunner, algorithm: Algorithm, device: torch.device, model: nn.Module) -> ClientRunner:
    """The client runner for a run: ``sequential``, ``batched``, or ``auto`` (batched on CUDA where the algorithm
    declares a batchable local plan, sequential otherwise); a runner object is returned as it is."""
    if not isinstance(runner, str):
        return runner
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    if runner == "sequential":
        return SequentialRunner()
    if runner in ("batched", "stacked"):  # a run on its own with runner="stacked" is a batched run
        return BatchedRunner()
    if device.type == "cuda" and batch_support(algorithm, model) is None:
        return BatchedRunner()
    return SequentialRunner()


__all__ = [
    "RUNNERS",
    "BatchedRunner",
    "ClientRunner",
    "LocalWork",
    "SequentialRunner",
    "batch_support",
    "eval_plan_gap",
    "local_plan_gap",
    "make_runner",
]
