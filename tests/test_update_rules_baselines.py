"""One small step of every baseline's local and server update, against a state computed in the test.

The model is a tiny two-layer net (2 inputs → 4 hidden units → 2 classes, optionally a BatchNorm1d after the first
layer) in float64; each client holds a handful of fixed samples, and the batch size covers a client's whole
training split, so a local epoch is exactly one full-batch step and the minibatch order cannot matter. Everything
goes through the algorithms' public hooks (``init``, ``local_train``, ``aggregate``, ``after_aggregate``,
``eval_state`` / ``eval_module`` / ``unseen_module``), as the engine calls them.

The expected states are written here with plain tensor arithmetic: a hand-written forward pass and cross-entropy,
gradients of that hand-written loss from ``torch.autograd.grad``, and the update rule of each method (which entries
step, in which order, with which regularizer and sign, which are averaged, with which weights, and which stay on the
client). Tolerances are float64 rounding (1e-10), far below the effect of any wrong sign, swapped argument or order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

from pflnb.algorithms import make_algorithm
from pflnb.data.federated import ClientData, FederatedDataset, Split
from pflnb.fl import OptimConfig, RunSettings, run_simulation, summarize
from pflnb.fl import state as S
from pflnb.fl.algorithm import Algorithm, ClientUpdate
from pflnb.fl.engine import Context
from pflnb.models.base import PFLModel

State = dict[str, torch.Tensor]
TOL = 1e-10
EPS_BN, MOMENTUM_BN = 1e-5, 0.1

# ---- the tiny model and data -------------------------------------------------------------------------------


class Tiny(PFLModel):
    """fc1 (2 → 4) [+ bn1] + ReLU = features; head (4 → 2)."""

    def __init__(self, bn: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(2, 4)
        if bn:
            self.bn1 = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)
        self.feat_dim = 4
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        z = self.fc1(torch.flatten(x, 1))
        return self.relu(self.bn1(z) if hasattr(self, "bn1") else z)


BODY = ["fc1.weight", "fc1.bias"]
BN_PARAMS = ["bn1.weight", "bn1.bias"]
BN_BUFFERS = ["bn1.running_mean", "bn1.running_var"]
HEAD = ["head.weight", "head.bias"]

X0 = [[0.9, -0.4], [0.2, 1.1], [-0.7, 0.5]]
Y0 = [0, 1, 1]
X1 = [[1.3, 0.3], [-0.2, -0.9], [0.6, 0.8], [-1.0, 0.1]]
Y1 = [1, 0, 0, 1]


def _split(x, y) -> Split:
    return Split(torch.tensor(x, dtype=torch.float64).reshape(-1, 1, 1, 2), torch.tensor(y))


def make_data() -> FederatedDataset:
    """Two clients with 3 and 4 training samples (unequal, so sample-size and uniform weights differ)."""
    clients = [
        ClientData(0, "c0", "d0", _split(X0, Y0), _split(X0[:2], Y0[:2]), _split(X0[1:], Y0[1:])),
        ClientData(1, "c1", "d1", _split(X1, Y1), _split(X1[:2], Y1[:2]), _split(X1[2:], Y1[2:])),
    ]
    unseen = [ClientData(2, "u", "d2", _split(X1[1:], Y1[1:]), _split(X0[:2], Y0[:2]), _split(X0, Y0))]
    return FederatedDataset("tiny", clients, 2, (1, 1, 2), unseen=unseen)


def make_ctx(bn: bool = False, lr: float = 0.3, epochs: int = 1, **optim) -> Context:
    data = make_data()

    def model_fn():
        torch.manual_seed(3)
        return Tiny(bn).double()

    ctx = Context(data, model_fn, OptimConfig(lr=lr, batch_size=4, local_epochs=epochs, **optim), 0, torch.device("cpu"))
    ctx.round = 1
    return ctx


def xy(ctx: Context, cid: int, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    s = (ctx.data.unseen[0] if cid == "unseen" else ctx.client(cid)).split(split)
    return s.x.reshape(len(s), -1), s.y


def n_train(cid: int) -> float:
    return float(len(Y0) if cid == 0 else len(Y1))


# ---- the hand-written model, loss and gradient ---------------------------------------------------------------


def forward(w: State, x: torch.Tensor, train: bool = True) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Features h, logits and (train-mode BN) the batch mean and unbiased variance."""
    z = x @ w["fc1.weight"].T + w["fc1.bias"]
    stats = {}
    if "bn1.weight" in w:
        if train:
            mu, var = z.mean(0), z.var(0, unbiased=False)
            stats = {"mean": mu, "var_unbiased": z.var(0, unbiased=True)}
        else:
            mu, var = w["bn1.running_mean"], w["bn1.running_var"]
        z = (z - mu) / torch.sqrt(var + EPS_BN) * w["bn1.weight"] + w["bn1.bias"]
    h = torch.clamp(z, min=0.0)
    return h, h @ w["head.weight"].T + w["head.bias"], stats


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (torch.logsumexp(logits, 1) - logits[torch.arange(len(y)), y]).mean()


def loss_of(w: State, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return cross_entropy(forward(w, x)[1], y)


def grads(w: State, keys: list[str], loss: Callable[[State], torch.Tensor]) -> State:
    """∂ loss(w) / ∂ w[k] for k in ``keys`` (autograd of the hand-written loss)."""
    leaves = {k: w[k].detach().clone().requires_grad_(k in keys) for k in w}
    g = torch.autograd.grad(loss(leaves), [leaves[k] for k in keys])
    return dict(zip(keys, g))


def bn_buffers_after(w: State, x: torch.Tensor) -> State:
    """BatchNorm running statistics after one train-mode forward pass on ``x``."""
    if "bn1.weight" not in w:
        return {}
    st = forward(w, x)[2]
    return {
        "bn1.running_mean": (1 - MOMENTUM_BN) * w["bn1.running_mean"] + MOMENTUM_BN * st["mean"],
        "bn1.running_var": (1 - MOMENTUM_BN) * w["bn1.running_var"] + MOMENTUM_BN * st["var_unbiased"],
        "bn1.num_batches_tracked": w["bn1.num_batches_tracked"] + 1,
    }


def sgd_step(w: State, x, y, keys: list[str], lr: float, extra: Callable[[State], torch.Tensor] | None = None) -> State:
    """One full-batch SGD step on ``keys`` of CE (+ ``extra``); BN statistics move as in a train-mode pass."""
    g = grads(w, keys, lambda v: loss_of(v, x, y) + (extra(v) if extra else 0.0))
    new = {k: (w[k] - lr * g[k]) if k in g else w[k].clone() for k in w}
    new.update(bn_buffers_after(w, x))
    return new


def average(states: list[State], weights: list[float], keys: list[str]) -> State:
    tot = sum(weights)
    return {k: sum(wi * s[k] for wi, s in zip(weights, states)) / tot for k in keys}


def assert_state(got: State, want: State, keys: list[str] | None = None, tol: float = TOL) -> None:
    keys = list(want) if keys is None else keys
    for k in keys:
        g, e = got[k].detach().double(), want[k].detach().double()
        assert g.shape == e.shape, k
        err = float((g - e).abs().max())
        assert err <= tol, f"{k}: max |got − expected| = {err:.3e}"


def differs(a: State, b: State, keys: list[str], by: float = 1e-6) -> bool:
    return any(float((a[k].double() - b[k].double()).abs().max()) > by for k in keys)


def run_round(algo: Algorithm, ctx: Context, clients_override: dict[int, dict] | None = None):
    """init → local_train (clients 0, 1) → aggregate → after_aggregate, as the engine's round does."""
    w0 = ctx.state_of(ctx.model)
    server, clients = algo.init(ctx, S.clone(w0))
    for cid, extra in (clients_override or {}).items():
        clients[cid] = {**clients[cid], **extra}
    ups = {cid: algo.local_train(ctx, cid, server, clients[cid]) for cid in (0, 1)}
    new_server = algo.aggregate(ctx, server, {cid: u.message for cid, u in ups.items()})
    after = {cid: algo.after_aggregate(ctx, cid, new_server, ups[cid].client) for cid in (0, 1)}
    return w0, server, ups, new_server, after


def perturbed(w: State, seed: int, scale: float = 0.3) -> State:
    gen = torch.Generator().manual_seed(seed)
    return {
        k: (v + scale * torch.randn(v.shape, generator=gen, dtype=v.dtype)) if k in BODY + HEAD else v.clone()
        for k, v in w.items()
    }


# ---- the FedAvg family: every setting of PartialFedAvg -------------------------------------------------------

ALL = BODY + HEAD


def expected_partial(
    ctx: Context,
    w0: State,
    personal: list[str],
    frozen: list[str] = (),
    mode: str = "sim",
    personal_epochs: int = 1,
    epochs: int = 1,
    mu: float = 0.0,
    squared: bool = True,
    weights: str = "n_samples",
    global_lr: float = 1.0,
) -> tuple[dict[int, State], State]:
    """Per client the trained model, and the new server model, from the family's rule (module docstring of
    pflnb/algorithms/partial.py): alt mode trains the personal part first (shared fixed), then the shared part;
    FedProx's (μ/2)‖w − w_g‖² acts on the shared parameters only; the server averages the shared entries."""
    lr = ctx.optim.lr
    params = [k for k in ALL + BN_PARAMS if k in w0]
    shared = [k for k in w0 if k not in personal]
    anchor = {k: w0[k].clone() for k in params if k in shared}
    prox = None
    if mu > 0:

        def prox(v: State) -> torch.Tensor:
            sq = sum(((v[k] - anchor[k]) ** 2).sum() for k in anchor)
            return 0.5 * mu * (sq if squared else torch.sqrt(sq + 1e-12))

    trained = {}
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        w = {k: v.clone() for k, v in w0.items()}
        if mode == "alt" and personal:
            for _ in range(personal_epochs):  # phase 1: personal part, shared part fixed, no proximal term
                w = sgd_step(w, x, y, [k for k in params if k in personal and k not in frozen], lr)
            keys = [k for k in params if k in shared and k not in frozen]
        else:
            keys = [k for k in params if k not in frozen]
        for _ in range(epochs):
            w = sgd_step(w, x, y, keys, lr, prox)
        trained[cid] = w
    if not shared:
        return trained, dict(w0)
    wts = [n_train(0), n_train(1)] if weights == "n_samples" else [1.0, 1.0]
    float_shared = [k for k in shared if w0[k].is_floating_point()]
    avg = average([trained[0], trained[1]], wts, float_shared)
    server = dict(w0)
    server.update({k: w0[k] + global_lr * (avg[k] - w0[k]) for k in float_shared})
    # integer entries (BN's batch counter) are not averaged: the first client's is kept (state.weighted_average)
    server.update({k: trained[0][k] for k in shared if not w0[k].is_floating_point() and global_lr == 1.0})
    return trained, server


PARTIAL_CASES = [
    # name, params, bn model, personal keys, expected-rule kwargs
    ("fedavg", {}, False, [], {}),
    ("fedavg", {"weights": "uniform"}, False, [], {"weights": "uniform"}),
    ("fedavg", {"global_lr": 0.3}, False, [], {"global_lr": 0.3}),  # not 0.5: symmetric in w and the average
    ("fedavg", {}, True, [], {}),  # BN entries averaged like any other (running statistics included)
    ("fedprox", {"mu": 0.7}, False, [], {"mu": 0.7}),
    ("fedprox", {"mu": 0.7, "prox_squared": False}, False, [], {"mu": 0.7, "squared": False}),
    ("fedbn", {}, True, BN_PARAMS + BN_BUFFERS + ["bn1.num_batches_tracked"], {}),
    ("fedbn-affine", {}, True, BN_PARAMS, {}),
    ("fedper", {}, False, HEAD, {}),
    ("fedsim", {}, False, HEAD, {}),
    ("fedrep", {"personal_epochs": 2}, False, HEAD, {"mode": "alt", "personal_epochs": 2}),
    ("fedalt", {}, False, HEAD, {"mode": "alt", "personal_epochs": 1}),
    ("fedalt", {"personal": "body"}, False, BODY, {"mode": "alt", "personal_epochs": 1}),
    ("fedrep", {"personal_epochs": 2, "mu": 0.7}, False, HEAD, {"mode": "alt", "personal_epochs": 2, "mu": 0.7}),
    ("lg-fedavg", {}, False, BODY, {}),
    ("fedper", {"personal": "top:1"}, False, HEAD, {}),
    ("fedper", {"personal": "bottom:1"}, True, BODY + BN_PARAMS + BN_BUFFERS + ["bn1.num_batches_tracked"], {}),
    ("fedbabu", {}, False, [], {"frozen": HEAD}),
    ("fedavg-ft", {}, False, [], {}),
    ("local", {}, False, ALL, {}),
]


@pytest.mark.parametrize(
    ("method", "params", "bn", "personal", "rule"), PARTIAL_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PARTIAL_CASES)]
)
def test_partial_family_one_round(method, params, bn, personal, rule):
    epochs = 2 if rule.get("mu") else 1  # the proximal term is zero at the first step from w_g: take two
    ctx = make_ctx(bn=bn, epochs=epochs)
    algo = make_algorithm(method, params)
    w0, _, ups, server, after = run_round(algo, ctx)
    trained, want_server = expected_partial(ctx, w0, personal, epochs=epochs, **rule)
    keys = list(w0)
    shared = [k for k in keys if k not in personal]
    for cid in (0, 1):
        sent = ups[cid].message.get("state", {})
        assert sorted(sent) == sorted(shared), "exactly the shared entries leave the client"
        assert_state(sent, trained[cid], shared)
        assert_state(after[cid].get("personal", {}), trained[cid], personal)  # the personal entries stay
        # the client's model after the round: server entries with its personal ones
        assert_state(algo.eval_state(ctx, cid, server, after[cid]), {**want_server, **{k: trained[cid][k] for k in personal}})
    assert_state(server["model"], want_server)
    if rule.get("frozen"):
        assert_state(server["model"], w0, rule["frozen"], tol=1e-15)  # FedBABU's head never trains


def test_fedprox_mu_changes_the_second_step():
    """The FedProx case is not vacuous: without μ the same two steps land elsewhere."""
    ctx = make_ctx(epochs=2)
    w0 = ctx.state_of(ctx.model)
    with_mu, _ = expected_partial(ctx, w0, [], epochs=2, mu=0.7)
    without, _ = expected_partial(ctx, w0, [], epochs=2, mu=0.0)
    assert differs(with_mu[0], without[0], ALL, by=1e-4)


def test_fedrep_phase_order_matters_in_this_setting():
    """Head first then body differs from body first then head (so the FedRep case can see a swapped order)."""
    ctx = make_ctx()
    w0 = ctx.state_of(ctx.model)
    x, y = xy(ctx, 0)
    head_first = sgd_step(sgd_step(w0, x, y, HEAD, 0.3), x, y, BODY, 0.3)
    body_first = sgd_step(sgd_step(w0, x, y, BODY, 0.3), x, y, HEAD, 0.3)
    assert differs(head_first, body_first, ALL, by=1e-4)


@pytest.mark.parametrize(
    ("method", "params", "tuned"),
    [("fedavg-ft", {}, ALL), ("fedbabu", {}, ALL), ("fedavg-ft", {"ft_part": "head", "ft_epochs": 2}, HEAD)],
)
def test_finetuned_evaluation(method, params, tuned):
    """FedAvg-FT and FedBABU evaluate the server model after ft_epochs full-batch steps on the ft_part entries."""
    ctx = make_ctx()
    algo = make_algorithm(method, params)
    w0, _, _, server, after = run_round(algo, ctx)
    for cid in (0, 1):
        module = algo.eval_module(ctx, cid, server, after[cid])
        x, y = xy(ctx, cid)
        want = server["model"]
        for _ in range(params.get("ft_epochs", 1)):
            want = sgd_step(want, x, y, tuned, ctx.optim.lr)
        assert_state(ctx.state_of(module), want)


def test_unseen_clients_start_from_the_average_of_the_personal_entries():
    ctx = make_ctx()
    algo = make_algorithm("fedper", {"unseen_personal": "average"})
    w0, _, _, server, _ = run_round(algo, ctx)
    trained, want_server = expected_partial(ctx, w0, HEAD)
    avg_head = average([trained[0], trained[1]], [n_train(0), n_train(1)], HEAD)
    module = algo.unseen_module(ctx, server, ctx.data.unseen[0], finetune=False)
    assert_state(ctx.state_of(module), {**want_server, **avg_head})
    default, ctx = make_algorithm("fedper"), make_ctx()  # the default: the never-trained initial head
    _, _, _, server_d, _ = run_round(default, ctx)
    module = default.unseen_module(ctx, server_d, ctx.data.unseen[0], finetune=False)
    assert_state(ctx.state_of(module), {**want_server, **{k: w0[k] for k in HEAD}})


# ---- Ditto ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prox", ["gradient", "proximal"])
def test_ditto(prox):
    """w: FedAvg's step. v: a step on CE + (λ/2)‖v − w_g‖² toward the round's global model w_g (not the client's
    new w); ``proximal``: an SGD step on CE, then v ← (v + ηλ w_g)/(1 + ηλ). Evaluated: v."""
    lam, lr = 0.8, 0.3
    ctx = make_ctx(lr=lr)
    w_init = ctx.state_of(ctx.model)
    v0 = {cid: perturbed(w_init, 10 + cid) for cid in (0, 1)}
    algo = make_algorithm("ditto", {"lam": lam, "prox": prox})
    w0, _, ups, server, after = run_round(algo, ctx, {cid: {"v": v0[cid]} for cid in (0, 1)})
    trained, want_server = expected_partial(ctx, w0, [])
    assert_state(server["model"], want_server)
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        if prox == "gradient":
            want_v = sgd_step(v0[cid], x, y, ALL, lr, lambda v: 0.5 * lam * sum(((v[k] - w0[k]) ** 2).sum() for k in ALL))
        else:
            step = sgd_step(v0[cid], x, y, ALL, lr)
            want_v = {k: (step[k] + lr * lam * w0[k]) / (1 + lr * lam) for k in ALL}
        assert_state(after[cid]["v"], want_v, ALL)
        assert_state(ups[cid].message["state"], trained[cid])
        assert_state(algo.eval_state(ctx, cid, server, after[cid]), want_v, ALL)


# ---- APFL ----------------------------------------------------------------------------------------------------


def test_apfl():
    """Per minibatch: w ← w − η∇f(w); then with v̄ = αv + (1−α)w (the new w, fixed): v ← v − η ∂f(v̄)/∂v and
    α ← clip(α − η_α ∂f(v̄)/∂α, 0, 1), both derivatives at the old v and α. Server: FedAvg of w. Evaluated: v̄."""
    lr, a_lr, alpha0 = 0.3, 0.3, 0.4
    ctx = make_ctx(lr=lr)
    v0 = {cid: perturbed(ctx.state_of(ctx.model), 20 + cid, scale=0.5) for cid in (0, 1)}
    algo = make_algorithm("apfl", {"alpha": alpha0, "alpha_lr": a_lr})
    w0, _, ups, server, after = run_round(algo, ctx, {cid: {"v": v0[cid]} for cid in (0, 1)})
    trained, want_server = expected_partial(ctx, w0, [])
    assert_state(server["model"], want_server)
    moved = []
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        w1 = trained[cid]
        v = {k: v0[cid][k].clone().requires_grad_(True) for k in ALL}
        a = torch.tensor(alpha0, dtype=torch.float64, requires_grad=True)
        loss = loss_of({k: a * v[k] + (1 - a) * w1[k] for k in ALL}, x, y)
        gv = torch.autograd.grad(loss, [v[k] for k in ALL] + [a])
        want_v = {k: v0[cid][k] - lr * g for k, g in zip(ALL, gv[:-1])}
        want_alpha = float(torch.clamp(a.detach() - a_lr * gv[-1], 0.0, 1.0))
        assert 0.0 < want_alpha < 1.0 and abs(want_alpha - alpha0) > 1e-4  # the α step is visible, not clipped
        moved.append(want_alpha - alpha0)
        assert_state(ups[cid].message["state"], w1)
        assert_state(after[cid]["v"], want_v, ALL)
        assert after[cid]["alpha"] == pytest.approx(want_alpha, abs=1e-12)
        mix = {k: want_alpha * want_v[k] + (1 - want_alpha) * want_server[k] for k in ALL}
        assert_state(algo.eval_state(ctx, cid, server, after[cid]), mix, ALL)
    assert moved[0] * moved[1] != 0


def test_apfl_authors_schedule_one_alpha_step_a_round_with_its_term():
    """``alpha_every="round", alpha_reg=c`` (the authors' code): over two local steps, α moves once, at the first,
    by −η_α(∂f(v̄)/∂α + cα); v takes both steps, the second through the mix with the moved α and the twice-trained w."""
    lr, a_lr, alpha0, c = 0.3, 0.3, 0.5, 0.02
    ctx = make_ctx(lr=lr, epochs=2)
    v0 = {cid: perturbed(ctx.state_of(ctx.model), 20 + cid, scale=0.5) for cid in (0, 1)}
    params = {"alpha": alpha0, "alpha_lr": a_lr, "alpha_every": "round", "alpha_reg": c}
    algo = make_algorithm("apfl", params)
    w0, _, ups, _, after = run_round(algo, ctx, {cid: {"v": v0[cid]} for cid in (0, 1)})
    v_init = {cid: {"v": v0[cid]} for cid in (0, 1)}
    every_step = run_round(make_algorithm("apfl", {**params, "alpha_every": "step"}), ctx, v_init)
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        w1 = sgd_step(w0, x, y, ALL, lr)
        w2 = sgd_step(w1, x, y, ALL, lr)

        def v_and_alpha_grads(v_state: State, alpha: float, w: State, x=x, y=y) -> tuple[State, float]:
            v = {k: v_state[k].clone().requires_grad_(True) for k in ALL}
            a = torch.tensor(alpha, dtype=torch.float64, requires_grad=True)
            g = torch.autograd.grad(loss_of({k: a * v[k] + (1 - a) * w[k] for k in ALL}, x, y), [v[k] for k in ALL] + [a])
            return dict(zip(ALL, g[:-1])), float(g[-1])

        gv1, ga1 = v_and_alpha_grads(v0[cid], alpha0, w1)
        alpha1 = min(max(alpha0 - a_lr * (ga1 + c * alpha0), 0.0), 1.0)
        v1 = {k: v0[cid][k] - lr * gv1[k] for k in ALL}
        gv2, _ = v_and_alpha_grads(v1, alpha1, w2)
        v2 = {k: v1[k] - lr * gv2[k] for k in ALL}
        assert 0.0 < alpha1 < 1.0 and abs(alpha1 - alpha0) > 1e-4  # visible, not clipped
        assert abs(c * alpha0) > 1e-3 * abs(ga1)  # the term is not negligible beside the gradient
        assert_state(ups[cid].message["state"], w2)
        assert after[cid]["alpha"] == pytest.approx(alpha1, abs=1e-12)
        assert_state(after[cid]["v"], v2, ALL)
        assert abs(every_step[4][cid]["alpha"] - alpha1) > 1e-6  # a step at every minibatch ends elsewhere


# ---- Per-FedAvg ----------------------------------------------------------------------------------------------


def test_per_fedavg():
    """First-order MAML on a (D, D') pair (one batch here, so D = D'): w ← w − β∇f(w − α∇f(w)); FedAvg of w;
    evaluated: the global model after one step w − α∇f(w) on the client's data."""
    alpha, beta = 0.2, 0.45
    ctx = make_ctx()
    algo = make_algorithm("per-fedavg", {"alpha": alpha, "beta": beta})
    w0, _, ups, server, after = run_round(algo, ctx)
    want = {}
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        inner = sgd_step(w0, x, y, ALL, alpha)
        g2 = grads(inner, ALL, lambda v, x=x, y=y: loss_of(v, x, y))
        want[cid] = {k: w0[k] - beta * g2[k] for k in ALL}
        assert_state(ups[cid].message["state"], want[cid], ALL)
    want_server = average([want[0], want[1]], [n_train(0), n_train(1)], ALL)
    assert_state(server["model"], want_server, ALL)
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        assert_state(ctx.state_of(algo.eval_module(ctx, cid, server, after[cid])), sgd_step(want_server, x, y, ALL, alpha), ALL)


def test_own_step_methods_say_when_the_configured_optimizer_is_not_used():
    """Per-FedAvg's and pFedMe's terms make plain gradient steps (update='terms'): under Adam, momentum or weight decay
    the phase warns instead of silently not using them; plain SGD and optimizer phases stay silent."""
    import warnings

    from pflnb.algorithms.meta import GradientStep
    from pflnb.fl.plan import Phase

    term = (GradientStep(("w",), 0.1),)
    with pytest.warns(UserWarning, match=r"optimizer \(adam, momentum 0.0, weight decay 0.0\) is not used"):
        Phase(OptimConfig(optimizer="adam"), terms=term, update="terms")
    with pytest.warns(UserWarning, match=r"\(sgd, momentum 0.9, weight decay 0.0\)"):
        Phase(OptimConfig(momentum=0.9), terms=term, update="terms")
    with pytest.warns(UserWarning, match=r"weight decay 0.001"):
        Phase(OptimConfig(weight_decay=1e-3), terms=term, update="terms")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Phase(OptimConfig(), terms=term, update="terms")
        Phase(OptimConfig(optimizer="adam", momentum=0.9))


# ---- pFedMe --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_pfedme(beta):
    """Per minibatch: K steps θ ← θ − η_p(∇f(θ) + λ(θ − w)) from θ = w_g, then w ← w − ηλ(w − θ); the client keeps θ
    and sends w; server w ← (1 − β) w_g + β · average. Evaluated: θ."""
    lam, lr, plr, K = 2.0, 0.3, 0.1, 3
    ctx = make_ctx(lr=lr)
    algo = make_algorithm("pfedme", {"lam": lam, "inner_steps": K, "personal_lr": plr, "beta": beta})
    w0, _, ups, server, after = run_round(algo, ctx)
    ws, thetas = {}, {}
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        theta = {k: w0[k].clone() for k in ALL}
        for _ in range(K):
            g = grads(theta, ALL, lambda v, x=x, y=y: loss_of(v, x, y))
            theta = {k: theta[k] - plr * (g[k] + lam * (theta[k] - w0[k])) for k in ALL}
        thetas[cid] = theta
        ws[cid] = {k: w0[k] - lr * lam * (w0[k] - theta[k]) for k in ALL}
        assert_state(ups[cid].message["state"], ws[cid], ALL)
        assert_state(after[cid]["theta"], theta, ALL)
    avg = average([ws[0], ws[1]], [n_train(0), n_train(1)], ALL)
    want_server = {k: (1 - beta) * w0[k] + beta * avg[k] for k in ALL}
    assert_state(server["model"], want_server, ALL)
    for cid in (0, 1):
        assert_state(algo.eval_state(ctx, cid, server, after[cid]), thetas[cid], ALL)


# ---- MOON ----------------------------------------------------------------------------------------------------


def test_moon():
    """CE + μ·ℓ_con with z from the model being trained (started at w_g), the positive z_glob from the frozen global
    model and the negative z_prev from the client's previous model: ℓ = −log(e^{cos(z,z_g)/τ} /
    (e^{cos(z,z_g)/τ} + e^{cos(z,z_p)/τ})). The client keeps its new model as "previous"; FedAvg; the global model
    is evaluated."""
    mu, tau, lr = 1.5, 0.5, 0.3
    ctx = make_ctx(lr=lr)
    prev = {cid: perturbed(ctx.state_of(ctx.model), 30 + cid, scale=0.6) for cid in (0, 1)}
    algo = make_algorithm("moon", {"mu": mu, "temperature": tau})
    w0, _, ups, server, after = run_round(algo, ctx, {cid: {"prev": prev[cid]} for cid in (0, 1)})

    def cos(a, b):
        return (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))

    want = {}
    for cid in (0, 1):
        x, y = xy(ctx, cid)
        z_glob, z_prev = forward(w0, x)[0], forward(prev[cid], x)[0]
        assert bool((z_glob.norm(dim=1) > 0).all() and (z_prev.norm(dim=1) > 0).all())

        def con(v, x=x, z_glob=z_glob, z_prev=z_prev):
            z = forward(v, x)[0]
            pos, neg = cos(z, z_glob) / tau, cos(z, z_prev) / tau
            return mu * (torch.logaddexp(pos, neg) - pos).mean()

        want[cid] = sgd_step(w0, x, y, ALL, lr, con)
        assert differs(want[cid], sgd_step(w0, x, y, ALL, lr), ALL, by=1e-5)  # the contrastive term acts
        assert_state(ups[cid].message["state"], want[cid], ALL)
        assert_state(after[cid]["prev"], want[cid], ALL)
    want_server = average([want[0], want[1]], [n_train(0), n_train(1)], ALL)
    assert_state(server["model"], want_server, ALL)
    assert_state(algo.eval_state(ctx, 0, server, after[0]), want_server, ALL)


# ---- FedMGDA+ ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("normalize", "epsilon"), [(True, 0.1), (False, 1.0), (False, 0.1)])
def test_fedmgda_server_step(normalize, epsilon):
    """Δ_i = w_i − w (normalized when ``normalize``); d = the min-norm point λv_1 + (1−λ)v_2 with |λ_i − ½| ≤ ε
    (closed form for two clients: the unconstrained minimizer clipped to the box); with normalized updates d is
    rescaled by the mean ‖Δ_i‖; then w ← w + η_g d."""
    ctx = make_ctx()
    algo = make_algorithm("fedmgda+", {"epsilon": epsilon, "normalize": normalize, "global_lr": 0.8})
    w0 = ctx.state_of(ctx.model)
    server, _ = algo.init(ctx, S.clone(w0))
    flat = torch.cat([w0[k].reshape(-1) for k in ALL])
    gen = torch.Generator().manual_seed(5)
    d1 = torch.randn(flat.shape, generator=gen, dtype=torch.float64)
    d2 = -0.3 * d1 + 0.2 * torch.randn(flat.shape, generator=gen, dtype=torch.float64)
    d2 = d2 / d2.norm()  # unequal norms (‖Δ_1‖ ≈ 4), so normalizing, rescaling and the ε box matter

    def as_state(vec):
        out, i = {}, 0
        for k in ALL:
            n = w0[k].numel()
            out[k] = w0[k] + vec[i : i + n].reshape(w0[k].shape)
            i += n
        return out

    new = algo.aggregate(ctx, server, {0: {"state": as_state(d1)}, 1: {"state": as_state(d2)}})
    a, b = (d1 / d1.norm(), d2 / d2.norm()) if normalize else (d1, d2)
    lam = float(((b - a) @ b) / ((a - b) @ (a - b)))
    lam = min(max(lam, max(0.0, 0.5 - epsilon)), min(1.0, 0.5 + epsilon))
    if not normalize and epsilon < 0.5:
        assert lam in (0.5 - epsilon, 0.5 + epsilon), "the constraint is active in this case"
    if not normalize and epsilon >= 0.5:
        assert 0.0 < lam < 1.0 and abs(lam - 0.5) > 0.1, "an interior minimizer away from the uniform weights"
    d = lam * a + (1 - lam) * b
    if normalize:
        d = d * (d1.norm() + d2.norm()) / 2
    assert_state(new["model"], as_state(0.8 * d), ALL, tol=1e-7)
    assert new["lambda"] == pytest.approx([lam, 1 - lam], abs=1e-6)


# ---- the engine's reported round -----------------------------------------------------------------------------


def test_summary_reports_the_best_mean_validation_round_never_test():
    evals = [
        {"round": 1, "val_acc": [1.0, 0.0], "test_acc": [0.9, 0.9]},  # best single client's val, mean 0.5
        {"round": 2, "val_acc": [0.5, 0.75], "test_acc": [0.2, 0.1]},  # best mean validation; worst test
        {"round": 3, "val_acc": [0.5, 0.5], "test_acc": [1.0, 1.0]},  # best test
        {"round": 4, "val_acc": [0.625, 0.625], "test_acc": [0.8, 0.4]},  # ties round 2's mean: the first wins
    ]
    s = summarize({"evals": evals})
    assert s["best_round"] == 2 and s["best_val_acc"] == 0.625
    assert s["test_acc"] == pytest.approx(0.15) and s["test_acc_clients"] == [0.2, 0.1]
    assert s["test_acc_worst"] == pytest.approx(0.1)
    assert s["last_round"] == 4 and s["last_test_acc"] == pytest.approx(0.6)


class _Scripted(nn.Module):
    """Predicts the right label on validation inputs when ``val_ok``, on test inputs when ``test_ok``."""

    def __init__(self, val_ok: bool, test_ok: bool) -> None:
        super().__init__()
        self.val_ok, self.test_ok = val_ok, test_ok

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(len(x), -1)
        label, is_test = x[:, 0].long(), x[:, 1] > 0
        ok = torch.where(is_test, torch.tensor(self.test_ok), torch.tensor(self.val_ok))
        pred = torch.where(ok, label, 1 - label)
        return torch.nn.functional.one_hot(pred, 2).double()


class _ScriptedAlgo(Algorithm):
    name = "scripted-for-test"
    SCRIPT = {1: (False, True), 2: (True, False), 3: (False, True)}  # round: (val right, test right)

    def local_train(self, ctx, cid, server, client):
        return ClientUpdate(client=client, message={})

    def eval_module(self, ctx, cid, server, client):
        return _Scripted(*self.SCRIPT[ctx.round])


def test_engine_reports_test_accuracy_at_the_best_validation_round():
    """Through run_simulation: round 2 has perfect validation and zero test accuracy, rounds 1 and 3 the opposite;
    the reported accuracy is round 2's test accuracy (0), the last-round value beside it (1)."""

    def split(labels, test):
        x = torch.tensor([[float(v), 1.0 if test else -1.0] for v in labels], dtype=torch.float64).reshape(-1, 1, 1, 2)
        return Split(x, torch.tensor(labels))

    clients = [ClientData(c, f"c{c}", "d", split([0, 1, 1], False), split([0, 1], False), split([1, 0, 1], True)) for c in (0, 1)]
    data = FederatedDataset("scripted", clients, 2, (1, 1, 2))
    rec = run_simulation(
        _ScriptedAlgo(), data, lambda: Tiny().double(), RunSettings(rounds=3, progress=False, optim=OptimConfig(batch_size=4))
    )
    assert [np.mean(e["val_acc"]) for e in rec["evals"]] == [0.0, 1.0, 0.0]
    assert [np.mean(e["test_acc"]) for e in rec["evals"]] == [1.0, 0.0, 1.0]
    assert rec["summary"]["best_round"] == 2
    assert rec["summary"]["test_acc"] == 0.0 and rec["summary"]["last_test_acc"] == 1.0
