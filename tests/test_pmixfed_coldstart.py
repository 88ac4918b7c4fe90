"""Cold start of unseen clients for the partial baselines (pMixFed spec §2.7): with ``unseen_personal="average"``
a held-out client starts from the sample-weighted average of the round's clients' personal entries, with
``"init"`` (the default) from the never-trained initial ones; training is the same under both."""

import dataclasses

import pytest
import torch
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.fl.engine import Context, derive_seed
from pflnb.models import build_model

OPT = OptimConfig(lr=0.05, batch_size=8)
MODEL = "cnn"


def _uneven_data():
    """Toy data whose clients have 24, 16 and 8 training samples (so sample weights differ from uniform)."""
    data = make_toy_data(num_clients=3, unseen=2)
    clients = [
        dataclasses.replace(c, train=type(c.train)(c.train.x[:m], c.train.y[:m])) for c, m in zip(data.clients, (24, 16, 8))
    ]
    return dataclasses.replace(data, clients=clients)


def _run(method, data, params, participation=1.0):
    fn = lambda: build_model(MODEL, data.input_shape, data.num_classes)  # noqa: E731
    settings = RunSettings(rounds=2, optim=OPT, progress=False, participation=participation)
    algo = make_algorithm(method, params)
    rec = run_simulation(algo, data, fn, settings)
    ctx = Context(data, fn, OPT, 0, torch.device("cpu"))
    return algo, rec, ctx, fn


@pytest.mark.parametrize("method", ["fedalt", "fedsim", "lg-fedavg"])
def test_average_cold_start_is_weighted_average_of_personal_parts(method):
    data = _uneven_data()
    algo, rec, ctx, _ = _run(method, data, {"unseen_personal": "average"}, participation=2 / 3)
    server, clients = rec["final"]["server"], rec["final"]["clients"]
    last = rec["rounds"][-1]["selected"]
    assert len(last) == 2
    keys = algo.personal_keys(ctx)
    assert keys
    sizes = {c: float(len(data.clients[c].train)) for c in last}  # 24, 16 or 8: Ω_k ∝ |D_k| over the last round
    total = sum(sizes.values())
    expected = {k: sum(sizes[c] / total * clients[c]["personal"][k] for c in last) for k in keys}  # by hand
    for k in keys:
        torch.testing.assert_close(server["personal_avg"][k], expected[k], atol=1e-6, rtol=0)
        uniform = sum(clients[c]["personal"][k] for c in last) / len(last)
        assert not torch.allclose(expected[k], uniform, atol=1e-4)  # the weights matter here
    state = algo.unseen_module(ctx, server, data.unseen[0], finetune=False).state_dict()
    for k in keys:
        torch.testing.assert_close(state[k], expected[k], atol=1e-6, rtol=0)
    shared = [k for k in state if k not in set(keys)]
    assert S.equal(state, server["model"], shared)  # the shared part is the global model


@pytest.mark.parametrize("method", ["fedalt", "lg-fedavg"])
def test_init_cold_start_keeps_initial_personal_part(method):
    data = _uneven_data()
    algo, rec, ctx, fn = _run(method, data, {})
    assert algo.params.unseen_personal == "init"
    torch.manual_seed(derive_seed(0, "init"))
    init = fn().state_dict()
    keys = algo.personal_keys(ctx)
    state = algo.unseen_module(ctx, rec["final"]["server"], data.unseen[0], finetune=False).state_dict()
    assert S.equal(state, init, keys)
    assert "personal_avg" not in rec["final"]["server"]


def test_option_changes_only_the_cold_start():
    data = _uneven_data()
    algo_a, a, ctx, _ = _run("fedsim", data, {})
    algo_b, b, _, _ = _run("fedsim", data, {"unseen_personal": "average"})
    assert [e["test_acc"] for e in a["evals"]] == [e["test_acc"] for e in b["evals"]]  # identical training
    assert S.equal(a["final"]["server"]["model"], b["final"]["server"]["model"])
    for cid in range(len(data.clients)):
        assert S.equal(a["final"]["clients"][cid]["personal"], b["final"]["clients"][cid]["personal"])
    head = algo_a.personal_keys(ctx)
    start_a, start_b = algo_a.unseen_state(ctx, a["final"]["server"]), algo_b.unseen_state(ctx, b["final"]["server"])
    assert not S.equal(start_a, start_b, head)  # only the unseen clients' starting head differs


def test_unseen_personal_validated():
    with pytest.raises(ValueError, match="unseen_personal"):
        make_algorithm("fedalt", {"unseen_personal": "mean"})
