"""FedSplit / FedFac update rules against states computed independently in the test (issue 13 item 7).

One local step and one server step on a tiny MLP: the expected states come from plain tensor arithmetic (the
merge of server and client rows, one SGD step from autograd on a fresh model, the weighted average of the shared
rows with the server step), so a flipped sign, a swapped server/client argument, a wrong phase order (old vs new
mask) or a bias that leaks into the average fails.
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import make_toy_data
from torch.func import functional_call

from pflnb.algorithms import make_algorithm
from pflnb.fl import OptimConfig
from pflnb.fl.engine import Context
from pflnb.models.nets import MLP
from pflnb.theory.factor import fa_partition

LR = 0.1
OPT = OptimConfig(lr=LR, batch_size=1000)  # one full-batch SGD step per epoch


def _model() -> MLP:
    return MLP(64, 4, hidden=(6, 5))


def _ctx(data):
    torch.manual_seed(0)
    return Context(data, _model, OPT, 0, torch.device("cpu"))


def _perturbed(state, scale, seed):
    g = torch.Generator().manual_seed(seed)
    return {k: v + scale * torch.randn(v.shape, generator=g) for k, v in state.items()}


def _sgd_step(state, split):
    """One full-batch SGD step on the mean cross-entropy, computed with autograd on a fresh model."""
    model = _model()
    params = {k: v.clone().requires_grad_(True) for k, v in state.items()}
    loss = F.cross_entropy(functional_call(model, params, (split.x,)), split.y)
    grads = torch.autograd.grad(loss, list(params.values()))
    return {k: (p - LR * g).detach() for (k, p), g in zip(params.items(), grads)}


@pytest.mark.parametrize("bias", ["follow", "local"])
def test_local_step_starts_from_merge_and_descends(bias):
    data = make_toy_data(num_clients=2)
    ctx = _ctx(data)
    shared = (0, 2, 3)
    algo = make_algorithm("fedfac", {"layers": (1,), "partition": "given", "given": shared, "bias": bias})
    server, _ = algo.init(ctx, ctx.model.state_dict())
    server["model"] = _perturbed(server["model"], 0.3, 1)
    store = _perturbed(server["model"], 0.5, 2)  # the client's own (personal) copy differs from the server's
    client = {"store": {k: store[k] for k in ("fc1.weight", "fc1.bias")}}
    up = algo.local_train(ctx, 0, server, client)

    m = torch.zeros(6, dtype=torch.bool)
    m[list(shared)] = True
    start = dict(server["model"])  # shared rows and every other layer from the server, personal rows from the store
    start["fc1.weight"] = torch.where(m[:, None], server["model"]["fc1.weight"], store["fc1.weight"])
    start["fc1.bias"] = store["fc1.bias"] if bias == "local" else torch.where(m, server["model"]["fc1.bias"], store["fc1.bias"])
    expect = _sgd_step(start, data.clients[0].train)
    new = up.client["store"]
    assert torch.allclose(new["fc1.weight"], expect["fc1.weight"], atol=1e-6)
    assert torch.allclose(new["fc1.bias"], expect["fc1.bias"], atol=1e-6)
    for k in ("fc2.weight", "head.weight", "head.bias"):
        assert torch.allclose(up.message["state"][k], expect[k], atol=1e-6)
    assert torch.allclose(up.message["rows"]["fc1.weight"], expect["fc1.weight"][m], atol=1e-6)  # only shared rows leave
    assert ("fc1.bias" in up.message["rows"]) == (bias == "follow")  # a local bias never leaves the client


@pytest.mark.parametrize("bias", ["follow", "local"])
def test_server_step_moves_only_shared_rows_by_the_global_lr(bias):
    data = make_toy_data(num_clients=3)
    ctx = _ctx(data)
    shared, eta = (1, 4), 0.5
    algo = make_algorithm("fedfac", {"layers": (1,), "partition": "given", "given": shared, "global_lr": eta, "bias": bias})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    server["model"] = _perturbed(server["model"], 0.3, 1)
    ups = {c: algo.local_train(ctx, c, server, clients[c]) for c in range(3)}
    new = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})["model"]

    n = torch.tensor([float(len(data.clients[c].train)) for c in range(3)])
    w = n / n.sum()
    m = torch.zeros(6, dtype=torch.bool)
    m[list(shared)] = True
    post = [ups[c].client["store"] for c in range(3)]  # each client's full post-training tensors of fc1
    post_rest = [ups[c].message["state"] for c in range(3)]
    g = server["model"]
    for k in ("fc2.weight", "fc2.bias", "head.weight", "head.bias"):  # θ_g + η Σ w_k (θ_k − θ_g)
        expect = g[k] + eta * sum(w[c] * (post_rest[c][k] - g[k]) for c in range(3))
        assert torch.allclose(new[k], expect, atol=1e-6)
    exp_w = g["fc1.weight"] + eta * sum(w[c] * (post[c]["fc1.weight"] - g["fc1.weight"]) for c in range(3))
    assert torch.allclose(new["fc1.weight"][m], exp_w[m], atol=1e-6)
    assert torch.equal(new["fc1.weight"][~m], g["fc1.weight"][~m])  # personal rows: the server copy is untouched
    if bias == "local":
        assert torch.equal(new["fc1.bias"], g["fc1.bias"])  # the split layer's bias is never averaged
    else:
        exp_b = g["fc1.bias"] + eta * sum(w[c] * (post[c]["fc1.bias"] - g["fc1.bias"]) for c in range(3))
        assert torch.allclose(new["fc1.bias"][m], exp_b[m], atol=1e-6)
        assert torch.equal(new["fc1.bias"][~m], g["fc1.bias"][~m])


@pytest.mark.parametrize("threshold", ["quantile", "mean"])
def test_dynamic_split_uses_the_new_mask_of_the_post_training_weights(threshold):
    data = make_toy_data(num_clients=4)
    ctx = _ctx(data)
    params = {"layers": (1,), "mode": "dynamic", "q": 0.5, "kappa": 0.85, "threshold": threshold}
    algo = make_algorithm("fedfac", params)
    server, clients = algo.init(ctx, ctx.model.state_dict())
    assert bool(server["masks"]["fc1"].all())  # round 1 trains from an all-shared split
    server["model"] = _perturbed(server["model"], 0.3, 1)
    server["masks"]["fc1"] = torch.tensor([True, False, True, False, True, False])  # M(t−1)
    stores = {
        c: {"store": _perturbed({k: server["model"][k] for k in ("fc1.weight", "fc1.bias")}, 0.5, 10 + c)} for c in range(4)
    }
    ups = {c: algo.local_train(ctx, c, server, stores[c]) for c in range(4)}
    out = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})

    post = [ups[c].client["store"]["fc1.weight"] for c in range(4)]
    expect_mask, res = fa_partition([p.double().numpy() for p in post], 0.85, 0.5, 500, 1e-5, "minres", threshold)
    expect_mask = torch.from_numpy(expect_mask)
    if threshold == "mean":
        assert torch.equal(expect_mask, torch.from_numpy(res.communalities >= res.communalities.mean()))
    assert torch.equal(out["masks"]["fc1"], expect_mask)  # M(t) from FA on the participating clients' new weights
    n = torch.tensor([float(len(data.clients[c].train)) for c in range(4)])
    w = n / n.sum()
    avg = sum(w[c] * post[c] for c in range(4))
    m = expect_mask
    assert torch.allclose(out["model"]["fc1.weight"][m], avg[m], atol=1e-6)  # shared under the NEW mask: averaged
    assert torch.equal(out["model"]["fc1.weight"][~m], server["model"]["fc1.weight"][~m])
    internals = out["internals"]
    assert internals["fa_converged/fc1"] is True and internals["fa_iterations/fc1"] >= 1
    assert internals["fa_gradient/fc1"] <= 1e-5


def test_given_threshold_without_value_is_all_personal_and_threshold_rules():
    data = make_toy_data(num_clients=3)
    ctx = _ctx(data)
    algo = make_algorithm("fedfac", {"layers": (1,), "mode": "dynamic", "threshold": "given"})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    ups = {c: algo.local_train(ctx, c, server, clients[c]) for c in range(3)}
    out = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})
    assert not bool(out["masks"]["fc1"].any())  # τ = +∞: every element of Λ personal
    assert torch.equal(out["model"]["fc1.weight"], server["model"]["fc1.weight"])
    with pytest.raises(ValueError, match="threshold"):
        make_algorithm("fedfac", {"threshold": "median"})
    with pytest.raises(ValueError, match="bias"):
        make_algorithm("fedfac", {"bias": "shared"})
