import pytest
import torch
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.fl import OptimConfig, RunSettings, run_simulation, sample_clients
from pflnb.fl import state as S
from pflnb.fl.engine import Context
from pflnb.models import build_model


def _model_fn(data, name="small-bn-cnn"):
    return lambda: build_model(name, data.input_shape, data.num_classes)


def _run(method, data, model="small-bn-cnn", **kw):
    settings = RunSettings(**{"rounds": 3, "optim": OptimConfig(lr=0.05, batch_size=8), "progress": False, **kw})
    return run_simulation(make_algorithm(method), data, _model_fn(data, model), settings)


def _evals(rec):
    return [(e["round"], e["val_acc"], e["test_acc"], e["test_loss"]) for e in rec["evals"]]


@pytest.mark.parametrize("method", ["fedavg", "local", "fedbn"])
def test_same_config_twice_gives_identical_metrics(toy_data, method):
    a, b = _run(method, toy_data), _run(method, toy_data)
    assert _evals(a) == _evals(b)
    assert [r["client_metrics"] for r in a["rounds"]] == [r["client_metrics"] for r in b["rounds"]]


def test_different_seed_gives_different_run(toy_data):
    assert _evals(_run("fedavg", toy_data, seed=0)) != _evals(_run("fedavg", toy_data, seed=1))


@pytest.mark.parametrize("method", ["fedavg", "fedbn"])
def test_resume_equals_uninterrupted_run(toy_data, tmp_path, method):
    full = _run(method, toy_data, rounds=4, participation=0.67)
    ckpt = str(tmp_path / "run.ckpt")
    part = _run(method, toy_data, rounds=4, participation=0.67, checkpoint_every=2, checkpoint_path=ckpt, stop_after=2)
    assert part["interrupted_at"] == 2 and len(part["evals"]) == 2
    resumed = _run(method, toy_data, rounds=4, participation=0.67, checkpoint_every=2, checkpoint_path=ckpt)
    assert _evals(resumed) == _evals(full)
    assert [r["selected"] for r in resumed["rounds"]] == [r["selected"] for r in full["rounds"]]
    assert S.equal(resumed["final"]["server"]["model"], full["final"]["server"]["model"])


def test_fedbn_equals_fedavg_without_bn(toy_data):
    a = _run("fedavg", toy_data, model="mlp", participation=0.67)
    b = _run("fedbn", toy_data, model="mlp", participation=0.67)
    assert _evals(a) == _evals(b)
    assert S.equal(a["final"]["server"]["model"], b["final"]["server"]["model"])


def test_fedbn_keeps_bn_local_and_averages_the_rest(toy_data):
    rec = _run("fedbn", toy_data, rounds=1)
    server, clients = rec["final"]["server"], rec["final"]["clients"]
    model = build_model("small-bn-cnn", toy_data.input_shape, toy_data.num_classes)
    assert sorted(clients[0]["personal"]) == sorted(model.bn_keys())
    # each client's BN statistics are its own
    assert not torch.equal(clients[0]["personal"]["bn1.running_mean"], clients[1]["personal"]["bn1.running_mean"])
    # evaluating client c uses the shared weights with client c's BN
    algo = make_algorithm("fedbn")
    ev = algo.eval_state(None, 1, server, clients[1])
    assert torch.equal(ev["bn1.running_mean"], clients[1]["personal"]["bn1.running_mean"])
    assert torch.equal(ev["conv1.weight"], server["model"]["conv1.weight"])


def test_fedbn_message_has_no_bn_entries(toy_data):
    data = toy_data
    algo = make_algorithm("fedbn")
    ctx = Context(data, _model_fn(data), OptimConfig(batch_size=8), 0, torch.device("cpu"))
    server, clients = algo.init(ctx, ctx.model.state_dict())
    up = algo.local_train(ctx, 0, server, clients[0])
    assert set(up.message["state"]).isdisjoint(ctx.bn_keys)
    assert set(up.message["state"]) | set(ctx.bn_keys) == set(ctx.model.state_dict())


def test_fedavg_aggregate_is_sample_weighted_average(toy_data):
    data = make_toy_data(num_clients=3, n=24)
    data.clients[2].train.x = data.clients[2].train.x[:8]
    data.clients[2].train.y = data.clients[2].train.y[:8]
    algo = make_algorithm("fedavg")
    ctx = Context(data, _model_fn(data, "mlp"), OptimConfig(batch_size=8), 0, torch.device("cpu"))
    server, clients = algo.init(ctx, ctx.model.state_dict())
    msgs = {c: algo.local_train(ctx, c, server, clients[c]).message for c in range(3)}
    new = algo.aggregate(ctx, server, msgs)["model"]
    w = [24, 24, 8]
    expected = sum(wi * msgs[c]["state"]["fc1.weight"] for c, wi in enumerate(w)) / sum(w)
    torch.testing.assert_close(new["fc1.weight"], expected, rtol=0, atol=1e-6)


def test_fedavg_global_lr_zero_keeps_server(toy_data):
    data = toy_data
    algo = make_algorithm("fedavg", {"global_lr": 0.0})
    ctx = Context(data, _model_fn(data, "mlp"), OptimConfig(batch_size=8), 0, torch.device("cpu"))
    server, clients = algo.init(ctx, ctx.model.state_dict())
    msgs = {c: algo.local_train(ctx, c, server, clients[c]).message for c in range(3)}
    assert S.equal(algo.aggregate(ctx, server, msgs)["model"], server["model"])


def test_local_never_touches_other_clients_and_sends_nothing(toy_data):
    rec1 = _run("local", toy_data, rounds=1, participation=0.34, model="mlp")
    sel = rec1["rounds"][0]["selected"]
    assert len(sel) == 1
    with torch.random.fork_rng():
        from pflnb.fl.engine import derive_seed

        torch.manual_seed(derive_seed(0, "init"))
        init = build_model("mlp", toy_data.input_shape, toy_data.num_classes).state_dict()
    for cid, client in enumerate(rec1["final"]["clients"]):
        assert S.equal(client["personal"], init) == (cid not in sel)
    algo = make_algorithm("local")
    ctx = Context(toy_data, _model_fn(toy_data, "mlp"), OptimConfig(batch_size=8), 0, torch.device("cpu"))
    server, clients = algo.init(ctx, ctx.model.state_dict())
    assert algo.local_train(ctx, 0, server, clients[0]).message == {}


def test_fedavg_one_client_one_round_equals_local(toy_data):
    data = make_toy_data(num_clients=1)
    a, b = _run("fedavg", data, rounds=1, model="mlp"), _run("local", data, rounds=1, model="mlp")
    assert S.equal(a["final"]["server"]["model"], b["final"]["clients"][0]["personal"])


def test_sampling_counts_and_determinism(toy_data):
    data = make_toy_data(num_clients=10)
    ctx = Context(data, _model_fn(data, "mlp"), OptimConfig(), 3, torch.device("cpu"))
    picks = []
    for t in range(1, 6):
        ctx.round = t
        s = sample_clients(ctx, 0.3)
        assert len(s) == 3 and s == sorted(set(s)) and s == sample_clients(ctx, 0.3)
        picks.append(tuple(s))
    assert len(set(picks)) > 1
    assert sample_clients(ctx, 1.0) == list(range(10))


def test_eval_every_k_rounds_and_summary(toy_data):
    rec = _run("fedavg", toy_data, rounds=5, eval_every=2)
    assert [e["round"] for e in rec["evals"]] == [2, 4, 5]
    s = rec["summary"]
    best = max(rec["evals"], key=lambda e: sum(e["val_acc"]))
    assert s["best_round"] == best["round"]
    assert s["test_acc"] == pytest.approx(sum(best["test_acc"]) / 3)
    assert s["test_acc_worst"] == min(best["test_acc"])
    assert all(len(r["client_metrics"]) == len(r["selected"]) for r in rec["rounds"])


def test_unseen_clients_evaluated_before_and_after_finetuning():
    data = make_toy_data(num_clients=3, unseen=2)
    rec = _run("fedavg", data, rounds=2)
    assert len(rec["unseen"]["before"]) == 2 and len(rec["unseen"]["after"]) == 2
    # "before" is exactly the final global model on each held-out client's test split
    from pflnb.fl import evaluate

    model = build_model("small-bn-cnn", data.input_shape, data.num_classes)
    model.load_state_dict(rec["final"]["server"]["model"])
    assert rec["unseen"]["before"] == [evaluate(model, c.test)["acc"] for c in data.unseen]
    assert all(0.0 <= a <= 1.0 for a in rec["unseen"]["after"])


def test_training_reduces_loss(toy_data):
    rec = _run("fedavg", toy_data, rounds=6, model="mlp")
    losses = [sum(m["loss"] for m in r["client_metrics"].values()) for r in rec["rounds"]]
    assert losses[-1] < losses[0]


def test_bad_settings_raise(toy_data):
    with pytest.raises(ValueError, match="rounds"):
        _run("fedavg", toy_data, rounds=0)
    with pytest.raises(ValueError, match="participation"):
        _run("fedavg", toy_data, participation=0.0)
    with pytest.raises(ValueError, match="unknown method"):
        make_algorithm("fedmagic")
    with pytest.raises(ValueError, match="unknown parameter"):
        make_algorithm("fedavg", {"lam": 1.0})
    with pytest.raises(ValueError, match="weights"):
        make_algorithm("fedavg", {"weights": "by-vibes"})


def test_learning_rate_decay_and_adam(toy_data):
    opt = OptimConfig(lr=0.1, lr_decay=0.5)
    assert opt.at_round(1).lr == 0.1 and opt.at_round(3).lr == pytest.approx(0.025)
    a = _run("fedavg", toy_data, model="mlp", optim=OptimConfig(lr=0.05, batch_size=8, lr_decay=0.5))
    b = _run("fedavg", toy_data, model="mlp")
    assert _evals(a) != _evals(b)
    c = _run("fedavg", toy_data, model="mlp", optim=OptimConfig(lr=1e-3, batch_size=8, optimizer="adam"))
    assert c["summary"]["test_acc"] >= 0.0
    with pytest.raises(ValueError, match="optimizer"):
        _run("fedavg", toy_data, model="mlp", optim=OptimConfig(optimizer="lbfgs"))
