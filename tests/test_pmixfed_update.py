"""pMixFed's update rules against expected states computed independently here, in float64 with plain tensor
arithmetic: the broadcast mix (Eq. 8) followed by one SGD step, the aggregation (Eq. 9/15) with data-size weights,
the adaptive μ of Eq. 6 from validation accuracy, and that test labels never reach training under ``acc_split="val"``.
A flipped sign, swapped global/local arguments, a wrong λ indexing or a wrong phase order fails these tests."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl.engine import Context
from pflnb.models import build_model

LR = 0.5
OPT = OptimConfig(lr=LR, batch_size=256, local_epochs=1, optimizer="sgd")  # one full-batch SGD step
MODEL = "pmixfed-mlp4"  # blocks fc1, fc2, fc3, head: n = 4
N = 4
TOL = 1e-12


def _f64(data):
    """The toy data in float64, with clients of 24, 16 and 8 training samples (data-size weights ≠ uniform)."""

    def conv(sp, m=None):
        return type(sp)(sp.x[:m].double(), sp.y[:m])

    clients = [
        dataclasses.replace(c, train=conv(c.train, m), val=conv(c.val), test=conv(c.test))
        for c, m in zip(data.clients, (24, 16, 8))
    ]
    return dataclasses.replace(data, clients=clients)


def _setup(seed_g=1, seed_l=2):
    data = _f64(make_toy_data(num_clients=3))
    fn = lambda: build_model(MODEL, data.input_shape, data.num_classes).double()  # noqa: E731
    ctx = Context(data, fn, OPT, 0, torch.device("cpu"))
    ctx.round = 3
    torch.manual_seed(seed_g)
    g = {k: v.clone() for k, v in fn().state_dict().items()}
    torch.manual_seed(seed_l)
    loc = {k: v.clone() for k, v in fn().state_dict().items()}
    return data, ctx, g, loc


def _block(key):
    """Block index i (1 = base … 4 = head) of a state key of the 4-block MLP."""
    return {"fc1": 1, "fc2": 2, "fc3": 3, "head": 4}[key.split(".")[0]]


def _forward(w, x):
    h = torch.flatten(x, 1)
    for name in ("fc1", "fc2", "fc3"):
        h = torch.relu(h @ w[f"{name}.weight"].T + w[f"{name}.bias"])
    return h @ w["head.weight"].T + w["head.bias"]


def _sgd_step(w, x, y, lr):
    leaves = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    loss = F.cross_entropy(_forward(leaves, x), y)
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return {k: v - lr * gk for (k, v), gk in zip(w.items(), grads)}


def _acc(w, split):
    return 100.0 * float((_forward(w, split.x).argmax(1) == split.y).double().mean())


def _close(a, b, tol=TOL):
    return all(torch.allclose(a[k], b[k], atol=tol, rtol=0) for k in b)


def test_local_update_is_broadcast_mix_then_one_sgd_step():
    data, ctx, g, loc = _setup()
    algo = make_algorithm("pmixfed-dynamic", {"mu0": 0.3})
    lam_b = {1: 0.9, 2: 0.6, 3: 0.3, 4: 0.0}  # Eq. 7: min(1, 0.3 · (4 − i)), by hand
    mixed = {k: lam_b[_block(k)] * g[k] + (1 - lam_b[_block(k)]) * loc[k] for k in g}
    tr = data.clients[1].train
    expected = _sgd_step(mixed, tr.x, tr.y, LR)
    up = algo.local_train(ctx, 1, {"model": g, "init": g}, {"model": loc})
    assert _close(up.client["model"], expected) and _close(up.message["state"], expected)
    step = max(float((expected[k] - mixed[k]).abs().max()) for k in g)
    assert step > 1e-3  # the step is far above the tolerance: a flipped sign would fail
    assert up.metrics["lam_broadcast"] == pytest.approx([0.9, 0.6, 0.3, 0.0], abs=1e-15)
    assert up.metrics["acc_local"] == pytest.approx(_acc(loc, data.clients[1].val))  # L_k's val accuracy, before mixing


def test_adaptive_mu_from_validation_accuracy():
    data, ctx, g, loc = _setup()
    algo = make_algorithm("pmixfed", {"horizon": 10, "b": 2.0})  # acc_split = "val" by default
    assert algo.params.acc_split == "val"
    acc = _acc(loc, data.clients[0].val)
    mu = 1.0 - 1.0 / (1.0 + math.exp(-2.0 * (3 / 10) * (acc - 50.0)))  # Eq. 6 at t/T = 3/10, b = 2
    up = algo.local_train(ctx, 0, {"model": g, "init": g}, {"model": loc})
    assert up.metrics["mu"] == pytest.approx(mu, abs=1e-15)
    lam_b = [min(1.0, mu * (N - i)) for i in range(1, N + 1)]
    assert up.metrics["lam_broadcast"] == pytest.approx(lam_b, abs=1e-15)
    mixed = {k: lam_b[_block(k) - 1] * g[k] + (1 - lam_b[_block(k) - 1]) * loc[k] for k in g}
    tr = data.clients[0].train
    assert _close(up.client["model"], _sgd_step(mixed, tr.x, tr.y, LR))
    test_algo = make_algorithm("pmixfed", {"horizon": 10, "b": 2.0, "acc_split": "test"})  # the paper's switch
    assert test_algo.local_train(ctx, 0, {"model": g, "init": g}, {"model": loc}).metrics["acc_local"] == pytest.approx(
        _acc(loc, data.clients[0].test)
    )


def _uploads(ctx):
    out = {}
    for c, seed in zip(range(3), (5, 6, 7)):
        torch.manual_seed(seed)
        out[c] = {"state": {k: v.clone() for k, v in ctx.model_fn().state_dict().items()}}
    return out


def test_aggregation_fixed_mu():
    data, ctx, g, _ = _setup()
    msgs = _uploads(ctx)
    algo = make_algorithm("pmixfed-dynamic", {"mu0": 0.3})
    lam_a = {1: 0.7, 2: 0.4, 3: 0.1, 4: 0.0}  # Eq. 7: max(0, 1 − 0.3 i), by hand
    omega = [24 / 48, 16 / 48, 8 / 48]  # Eq. 9: Ω_k ∝ |D_k|
    expected = {}
    for k in g:
        avg = sum(w * msgs[c]["state"][k] for c, w in zip(range(3), omega))
        expected[k] = lam_a[_block(k)] * g[k] + (1 - lam_a[_block(k)]) * avg
    new = algo.aggregate(ctx, {"model": g, "init": g}, msgs)
    assert _close(new["model"], expected)
    assert new["lam_agg"] == pytest.approx([0.7, 0.4, 0.1, 0.0], abs=1e-15)


def test_aggregation_adaptive_mu_from_global_validation_accuracy():
    data, ctx, g, _ = _setup()
    msgs = {c: m for c, m in _uploads(ctx).items() if c in (0, 2)}  # a partial round: clients 0 and 2
    algo = make_algorithm("pmixfed", {"horizon": 20})
    acc_g = (_acc(g, data.clients[0].val) + _acc(g, data.clients[2].val)) / 2  # G's mean val accuracy on the round
    mu = 1.0 - 1.0 / (1.0 + math.exp(-(3 / 20) * (acc_g - 50.0)))
    lam_a = [max(0.0, 1.0 - i * mu) for i in range(1, N + 1)]
    omega = {0: 24 / 32, 2: 8 / 32}
    expected = {}
    for k in g:
        avg = sum(w * msgs[c]["state"][k] for c, w in omega.items())
        lam = lam_a[_block(k) - 1]
        expected[k] = lam * g[k] + (1 - lam) * avg
    new = algo.aggregate(ctx, {"model": g, "init": g}, msgs)
    assert new["acc_global"] == pytest.approx(acc_g) and new["mu_agg"] == pytest.approx(mu, abs=1e-15)
    assert _close(new["model"], expected)


def test_unseen_client_starts_from_the_global_model():
    data, ctx, g, loc = _setup()
    algo = make_algorithm("pmixfed")
    state = algo.unseen_module(ctx, {"model": g, "init": loc}, data.clients[0], finetune=False).state_dict()
    assert _close(state, g, 0.0)


def _permuted_test_labels(data):
    clients = [dataclasses.replace(c, test=type(c.test)(c.test.x, (c.test.y + 1) % data.num_classes)) for c in data.clients]
    return dataclasses.replace(data, clients=clients)


@pytest.mark.parametrize("split, leaks", [("val", False), ("test", True)])
def test_test_labels_reach_training_only_under_the_paper_switch(split, leaks):
    data = make_toy_data(num_clients=3)
    fn = lambda: build_model("cnn", data.input_shape, data.num_classes)  # noqa: E731
    settings = RunSettings(rounds=3, optim=OptimConfig(lr=0.05, batch_size=8), progress=False)
    params = {"acc_split": split, "horizon": 3, "b": 5.0}
    runs = [run_simulation(make_algorithm("pmixfed", params), d, fn, settings) for d in (data, _permuted_test_labels(data))]
    mus = [[m["mu"] for r in run["rounds"] for m in r["client_metrics"].values()] for run in runs]
    g = [run["final"]["server"]["model"] for run in runs]
    same = mus[0] == mus[1] and all(torch.equal(g[0][k], g[1][k]) for k in g[0])
    assert same != leaks
