"""Defining invariants and limits of every baseline method."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import make_toy_data

from pflnb.algorithms import list_methods, make_algorithm
from pflnb.algorithms.moon import model_contrastive_loss
from pflnb.algorithms.partial import layer_split_keys
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.fl.engine import Context
from pflnb.fl.training import batch_indices
from pflnb.models import build_model

OPT = OptimConfig(lr=0.05, batch_size=8)


def _run(method, data, params=None, model="mlp", **kw):
    settings = RunSettings(**{"rounds": 2, "optim": OPT, "progress": False, **kw})
    fn = lambda: build_model(model, data.input_shape, data.num_classes)  # noqa: E731
    return run_simulation(make_algorithm(method, params), data, fn, settings)


def _ctx(data, model="mlp", opt=OPT):
    return Context(data, lambda: build_model(model, data.input_shape, data.num_classes), opt, 0, torch.device("cpu"))


def _evals(rec):
    return [(e["val_acc"], e["test_acc"], e["test_loss"]) for e in rec["evals"]]


@pytest.mark.parametrize("method", list_methods())
def test_every_method_runs_and_is_deterministic(toy_data, method):
    a, b = _run(method, toy_data, model="small-bn-cnn"), _run(method, toy_data, model="small-bn-cnn")
    assert _evals(a) == _evals(b)
    assert all(0 <= x <= 1 for e in a["evals"] for x in e["test_acc"])


def test_layer_split_keys():
    m = build_model("cnn-bn", (1, 16, 16), 10)
    layers, head = m.layers(), m.head_keys()
    everything = sorted(m.state_dict())
    assert layer_split_keys(layers, head, "none") == []
    assert sorted(layer_split_keys(layers, head, "all")) == everything
    assert sorted(layer_split_keys(layers, head, "head") + layer_split_keys(layers, head, "body")) == everything
    for k in range(len(layers) + 1):
        bottom = layer_split_keys(layers, head, f"bottom:{k}")
        top = layer_split_keys(layers, head, f"top:{len(layers) - k}")
        assert sorted(bottom + top) == everything and not set(bottom) & set(top)
    assert "bn1.running_mean" in layer_split_keys(layers, head, "bottom:1")  # BN travels with its conv
    with pytest.raises(ValueError):
        layer_split_keys(layers, head, "top:99")
    with pytest.raises(ValueError, match="personal"):
        make_algorithm("fedper", {"personal": "middle"})


@pytest.mark.parametrize(
    "method, kept",
    [
        ("fedavg", lambda m: []),
        ("fedbn", lambda m: m.bn_keys()),
        ("fedper", lambda m: m.head_keys()),
        ("fedrep", lambda m: m.head_keys()),
        ("fedalt", lambda m: m.head_keys()),
        ("lg-fedavg", lambda m: m.body_keys()),
        ("local", lambda m: list(m.state_dict())),
    ],
)
def test_what_leaves_the_client(toy_data, method, kept):
    ctx = _ctx(toy_data, "small-bn-cnn")
    algo = make_algorithm(method)
    server, clients = algo.init(ctx, ctx.model.state_dict())
    up = algo.local_train(ctx, 0, server, clients[0])
    sent = set(up.message.get("state", {}))
    local = set(kept(ctx.model))
    assert sent.isdisjoint(local)
    assert sent | local == set(ctx.model.state_dict())
    assert set(up.client["personal"]) == local


def test_fedprox_mu_zero_equals_fedavg(toy_data):
    a, b = _run("fedavg", toy_data), _run("fedprox", toy_data, {"mu": 0.0})
    assert _evals(a) == _evals(b)
    assert S.equal(a["final"]["server"]["model"], b["final"]["server"]["model"])


def test_fedprox_pulls_local_model_toward_global(toy_data):
    ctx = _ctx(toy_data)
    dist = {}
    for mu in (0.0, 1.0, 10.0):
        algo = make_algorithm("fedprox", {"mu": mu})
        server, clients = algo.init(ctx, ctx.model.state_dict())
        up = algo.local_train(ctx, 0, server, clients[0])
        dist[mu] = S.distance(up.message["state"], server["model"])
    assert dist[10.0] < dist[1.0] < dist[0.0]


def test_fedrep_step_counts(toy_data):
    ctx = _ctx(toy_data)
    n_batches = -(-len(toy_data.clients[0].train) // OPT.batch_size)
    for epochs in (1, 3):
        algo = make_algorithm("fedrep", {"personal_epochs": epochs})
        server, clients = algo.init(ctx, ctx.model.state_dict())
        m = algo.local_train(ctx, 0, server, clients[0]).metrics
        assert m["personal_steps"] == epochs * n_batches and m["steps"] == OPT.local_epochs * n_batches
    head = set(ctx.model.head_keys())
    trained = algo.trainable(ctx, ctx.model, algo.personal_keys(ctx))
    assert {id(p) for p in trained} == {id(p) for n, p in ctx.model.named_parameters() if n in head}


def test_fedbabu_head_stays_at_init_during_federation(toy_data):
    rec = _run("fedbabu", toy_data, rounds=3, model="small-bn-cnn")
    with torch.random.fork_rng():
        from pflnb.fl.engine import derive_seed

        torch.manual_seed(derive_seed(0, "init"))
        init = build_model("small-bn-cnn", toy_data.input_shape, toy_data.num_classes).state_dict()
    server = rec["final"]["server"]["model"]
    assert S.equal(server, init, keys=["head.weight", "head.bias"])
    assert not S.equal(server, init, keys=["conv1.weight"])


@pytest.mark.parametrize("method", ["fedavg-ft", "fedbabu", "per-fedavg"])
def test_evaluation_personalizes_without_touching_state(toy_data, method):
    ctx = _ctx(toy_data)
    algo = make_algorithm(method)
    server, clients = algo.init(ctx, ctx.model.state_dict())
    before = S.clone(server["model"])
    model = algo.eval_module(ctx, 0, server, clients[0])
    assert S.equal(server["model"], before)
    assert not S.equal(model.state_dict(), before)


def test_apfl_limits_alpha_zero_is_fedavg_alpha_one_is_local(toy_data):
    fedavg, local = _run("fedavg", toy_data), _run("local", toy_data)
    a0 = _run("apfl", toy_data, {"alpha": 0.0, "adaptive": False})
    a1 = _run("apfl", toy_data, {"alpha": 1.0, "adaptive": False})
    assert _evals(a0) == _evals(fedavg)
    assert _evals(a1) == _evals(local)


def test_apfl_adaptive_alpha_moves_and_stays_in_unit_interval(toy_data):
    rec = _run("apfl", toy_data, {"alpha": 0.5, "alpha_lr": 0.5}, rounds=3)
    alphas = rec["rounds"][-1]["internals"]["alpha"]
    assert all(0.0 <= a <= 1.0 for a in alphas) and any(a != 0.5 for a in alphas)


def test_ditto_large_lambda_keeps_personal_model_at_global(toy_data):
    ctx = _ctx(toy_data)
    algo = make_algorithm("ditto", {"lam": 1e9, "prox": "proximal"})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    server = {**server, "model": S.add(server["model"], S.scale(server["model"], 0.1))}  # w_g ≠ v's start
    up = algo.local_train(ctx, 0, server, clients[0])
    params = [n for n, _ in ctx.model.named_parameters()]
    assert S.distance(up.client["v"], server["model"], params) < 1e-5 * S.norm(server["model"], params)


def test_ditto_larger_lambda_stays_closer_to_global(toy_data):
    ctx = _ctx(toy_data)
    dist = []
    for lam in (0.0, 1.0, 10.0):
        algo = make_algorithm("ditto", {"lam": lam})
        server, clients = algo.init(ctx, ctx.model.state_dict())
        server = {**server, "model": S.add(server["model"], S.scale(server["model"], 0.1))}
        dist.append(S.distance(algo.local_train(ctx, 0, server, clients[0]).client["v"], server["model"]))
    assert dist[2] < dist[1] < dist[0]


def test_per_fedavg_alpha_zero_is_sgd_on_the_second_batches():
    data = make_toy_data(num_clients=1, n=16)
    ctx = _ctx(data)
    ctx.round = 1
    algo = make_algorithm("per-fedavg", {"alpha": 0.0, "beta": 0.1})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    out = algo.local_train(ctx, 0, server, clients[0]).message["state"]
    # manual: same batches, w − β ∇f_{batch 2}(w)
    idx = list(batch_indices(16, 8, ctx.generator("train", 0)))
    model = ctx.load(server["model"])
    split = data.clients[0].train
    loss = F.cross_entropy(model(split.x[idx[1]]), split.y[idx[1]])
    grads = torch.autograd.grad(loss, list(model.parameters()))
    for (n, p), g in zip(model.named_parameters(), grads):
        torch.testing.assert_close(out[n], p.detach() - 0.1 * g, rtol=0, atol=1e-6)


def test_pfedme_limits(toy_data):
    ctx = _ctx(toy_data)
    algo = make_algorithm("pfedme", {"inner_steps": 0})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    up = algo.local_train(ctx, 0, server, clients[0])
    assert S.equal(up.message["state"], server["model"])  # θ = w throughout: w does not move
    algo = make_algorithm("pfedme", {"beta": 0.0})
    up = algo.local_train(ctx, 0, server, clients[0])
    assert not S.equal(up.message["state"], server["model"])
    assert S.equal(algo.aggregate(ctx, server, {0: up.message})["model"], server["model"])


def test_moon_mu_zero_equals_fedavg(toy_data):
    assert _evals(_run("moon", toy_data, {"mu": 0.0})) == _evals(_run("fedavg", toy_data))


def test_model_contrastive_loss_closed_form():
    z = torch.tensor([[1.0, 0.0]])
    tau = 0.5
    got = model_contrastive_loss(z, z.clone(), torch.tensor([[0.0, 1.0]]), tau)
    expected = -np.log(np.exp(1 / tau) / (np.exp(1 / tau) + 1.0))
    assert float(got) == pytest.approx(expected, rel=1e-6)


def test_fedmgda_single_client_equals_fedavg():
    data = make_toy_data(num_clients=1)
    a = _run("fedavg", data, rounds=2)
    b = _run("fedmgda+", data, rounds=2)
    for k, v in a["final"]["server"]["model"].items():
        torch.testing.assert_close(b["final"]["server"]["model"][k], v, rtol=1e-5, atol=1e-5)


def test_fedmgda_direction_descends_every_client():
    data = make_toy_data(num_clients=3)
    ctx = _ctx(data)
    algo = make_algorithm("fedmgda+", {"epsilon": 1.0, "normalize": False, "rescale": False})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    msgs = {c: algo.local_train(ctx, c, server, clients[c]).message for c in range(3)}
    new = algo.aggregate(ctx, server, msgs)
    params = [n for n, _ in ctx.model.named_parameters()]
    d = S.flatten(S.sub(new["model"], server["model"]), params).double()
    for c in range(3):
        delta = S.flatten(S.sub(msgs[c]["state"], server["model"]), params).double()
        assert float(d @ delta) >= float(d @ d) * (1 - 1e-4)


def test_variant_rows_are_the_base_with_other_defaults():
    """A registry row (name, base, parameters, description) is the base method with those defaults, nothing more."""
    import dataclasses

    from pflnb.algorithms import get_algorithm_class
    from pflnb.algorithms.partial import PartialFedAvg
    from pflnb.algorithms.registry import REGISTRY, variant

    rows = {
        "fedbn": (PartialFedAvg, {"bn": "local"}),
        "fedrep": (PartialFedAvg, {"personal": "head", "mode": "alt", "personal_epochs": 5}),
        "lg-fedavg": (PartialFedAvg, {"personal": "body"}),
        "fedbabu": (PartialFedAvg, {"frozen": "head", "ft_epochs": 1}),
        "s-fedpg": (get_algorithm_class("fedpg"), {"line_search": True}),
        "pmixfed-dynamic": (get_algorithm_class("pmixfed"), {"mu_mode": "fixed"}),
        "fedco2-label": (get_algorithm_class("fedco2"), {"intra": "none", "inter": "none", "weights": "n_samples"}),
    }
    for name, (base, changed) in rows.items():
        cls = get_algorithm_class(name)
        assert cls.__bases__ == (base,) and cls.name == name
        assert vars(cls).keys() <= {"name", "Params", "__doc__", "__module__", "personalized", "__dict__", "__weakref__"}
        want = {**dataclasses.asdict(base.Params()), **changed}
        assert dataclasses.asdict(cls.Params()) == want
        assert cls.from_dict({}).params == cls.Params()
    assert get_algorithm_class("fedavg").personalized is False and get_algorithm_class("fedbn").personalized is True
    assert get_algorithm_class("lg-fedavg").__name__ == "LGFedAvg"
    assert get_algorithm_class("fedprox").from_dict({"mu": 0.5}).params.mu == 0.5  # rows take parameters as any method
    with pytest.raises(ValueError, match="no parameter"):
        variant("bad-row", PartialFedAvg, "Bad: a row.", nonsense=1)
    with pytest.raises(ValueError):
        variant("bad-mode", PartialFedAvg, "BadMode: a row.", mode="sideways")  # defaults are validated
    assert "bad-row" not in REGISTRY and "bad-mode" not in REGISTRY
