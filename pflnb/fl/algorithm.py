"""The hook interface between the engine and an algorithm.

An algorithm is stateless apart from its typed ``params``: every quantity that lives across rounds is in
``server`` (a dict owned by the server) or ``clients[cid]`` (one dict per client). That keeps runs
checkpointable and lets a batched client runner replace the sequential one without touching algorithms.

Per round the engine calls, in order:
  1. ``local_train(ctx, cid, server, client)`` for each sampled client → :class:`ClientUpdate`
     (the new client state, the ``message`` that leaves the client, and metrics); an algorithm that declares
     its local work as a :class:`~pflnb.fl.plan.LocalPlan` (``local_plan``) and turns the plan's result into
     the update (``finish_local``) gets ``local_train`` for free and can be trained by the batched runner;
  2. ``aggregate(ctx, server, messages)`` → the new server state;
  3. ``after_aggregate(ctx, cid, server, client)`` for each sampled client → the client state
     (e.g. LG-Mix mixes local and global updates here);
  4. on evaluation rounds ``eval_module(ctx, cid, server, client)`` for every client (``eval_plan`` declares
     the same for the batched runner: the state evaluated and any fine-tuning phases before it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torch import nn

from pflnb.data import ClientData
from pflnb.fl import state as S
from pflnb.fl.plan import LocalPlan, PlanResult
from pflnb.fl.sequential import run_plan
from pflnb.fl.training import train_epochs


@dataclass
class ClientUpdate:
    """What one client's local round produced: its new state, the message it sends, and metrics."""

    client: dict[str, Any]
    message: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NoParams:
    """An algorithm without hyperparameters."""


class Algorithm:
    """Base class: subclasses set ``name``, ``Params`` and override the hooks they need."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    personalized: ClassVar[bool] = True
    # The optimizer the method's local steps are, where it makes its own steps whatever the config's optimizer says
    # (Per-FedAvg's and pFedMe's plain gradient steps: "sgd"); experiments run and tune such an arm with that optimizer
    # (:func:`pflnb.experiments.paper.arm_config`). None: the configured optimizer makes the steps.
    steps_with: ClassVar[str | None] = None

    def __init__(self, params: Any = None) -> None:
        self.params = self.Params() if params is None else params

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> Algorithm:
        """Build the algorithm from a dict of hyperparameters, rejecting unknown names."""
        values = dict(values or {})
        names = {f.name for f in dataclasses.fields(cls.Params)}
        unknown = set(values) - names
        if unknown:
            raise ValueError(f"unknown parameter(s) {sorted(unknown)} for method {cls.name!r}; allowed: {sorted(names)}")
        params = cls.Params(**values)
        if hasattr(params, "validate"):
            params.validate()
        return cls(params)

    # ---- hooks -------------------------------------------------------------------------------------
    def init(self, ctx: Any, init_state: S.State) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Initial server state and one state per client (default: a server model, empty clients)."""
        return {"model": S.clone(init_state)}, [{} for _ in range(ctx.num_clients)]

    def local_train(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> ClientUpdate:
        """One client's local work in a round (default: ``local_plan`` run by the sequential training path,
        then ``finish_local``)."""
        plan = self.local_plan(ctx, cid, server, client)
        if plan is None:
            raise NotImplementedError(f"{type(self).__name__} defines neither local_train nor local_plan")
        return self.finish_local(ctx, cid, server, client, plan, run_plan(ctx, plan))

    def local_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan | None:
        """The client's local work as a declared plan (None: not declared; runners call ``local_train``)."""
        return None

    def finish_local(
        self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any], plan: LocalPlan, result: PlanResult
    ) -> ClientUpdate:
        """The client's update from its executed plan (new client state, message, metrics)."""
        raise NotImplementedError(f"{type(self).__name__} declares a local plan but no finish_local")

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """The new server state from the messages of the sampled clients."""
        return server

    def after_aggregate(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
        """A sampled client's state after aggregation (default: unchanged)."""
        return client

    def eval_state(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> S.State:
        """The model state that client ``cid`` is evaluated with."""
        return client["model"] if "model" in client else server["model"]

    def eval_module(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> nn.Module:
        """A module computing client ``cid``'s logits (default: the scratch model with ``eval_state``)."""
        return ctx.load(self.eval_state(ctx, cid, server, client))

    def eval_plan(self, ctx: Any, cid: int, server: dict[str, Any], client: dict[str, Any]) -> LocalPlan | None:
        """What ``eval_module`` evaluates, declared: slot ``main`` of the plan after its phases (default: the
        ``eval_state``, no phases). Must agree with ``eval_module``; None: evaluate through ``eval_module``."""
        return LocalPlan(cid, {"main": self.eval_state(ctx, cid, server, client)})

    def unseen_module(self, ctx: Any, server: dict[str, Any], data: ClientData, finetune: bool) -> nn.Module:
        """A held-out client's model: the global model, fine-tuned on its train split when ``finetune``."""
        model = ctx.load(server["model"])
        if finetune:
            train_epochs(model, data.train, ctx.optim, ctx.generator("unseen", data.cid), epochs=ctx.finetune_epochs)
        return model

    def extra_metrics(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """Method-specific evaluation metrics computed on evaluation rounds (e.g. FedPG's G-acc)."""
        return {}

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """Method internals to log after each round (numbers or per-client lists)."""
        return {}
