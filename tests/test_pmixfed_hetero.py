"""Heterogeneous client depths (pMixFed Table 3, spec §2.6 item 5): ownership of blocks, the ownership-renormalised
aggregation, the depth-cuttable MLP, and a short run where blocks no client owns never move."""

import numpy as np
import pytest
import torch
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.pmixfed import model_blocks, owned_blocks, owner_aggregate
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.fl.engine import derive_seed
from pflnb.models import build_model

OPT = OptimConfig(lr=0.05, batch_size=8)


def test_owned_blocks():
    assert owned_blocks(3, 15) == [0, 1, 14]  # blocks 1..M_k−1 and the global head
    assert owned_blocks(15, 15) == list(range(15))
    for bad in (1, 16):
        with pytest.raises(ValueError, match="depth"):
            owned_blocks(bad, 15)


def _states(seed, n_blocks=4):
    g = torch.Generator().manual_seed(seed)
    return {f"b{i}.{p}": torch.randn(3, generator=g) for i in range(n_blocks) for p in ("weight", "bias")}


def test_owner_aggregate_averages_each_block_over_its_owners_only():
    blocks = [(f"b{i}", [f"b{i}.weight", f"b{i}.bias"]) for i in range(4)]
    g = _states(0)
    uploads = [_states(s) for s in (1, 2, 3)]
    owners = [[0, 3], [0, 1, 3], [0, 3]]  # block 1: client 1 only; block 2: nobody
    uploads = [S.select(u, [k for i in own for k in blocks[i][1]]) for u, own in zip(uploads, owners)]
    w = [1.0, 2.0, 5.0]
    new = owner_aggregate(g, uploads, w, owners, blocks, np.zeros(4))
    everyone = S.weighted_average([S.select(u, blocks[0][1] + blocks[3][1]) for u in uploads], w)
    assert S.equal(new, everyone, blocks[0][1] + blocks[3][1])  # Ω renormalised over the three owners
    assert S.equal(new, uploads[1], blocks[1][1])  # the only owner's block, weight renormalised to 1
    assert S.equal(new, g, blocks[2][1])  # owned by nobody: unchanged
    lam = np.array([0.25, 0.5, 0.9, 0.0])
    mixed = owner_aggregate(g, uploads, w, owners, blocks, lam)
    for i, (_, keys) in enumerate(blocks):
        if i == 2:
            assert S.equal(mixed, g, keys)
            continue
        ref = new if i != 1 else uploads[1]
        for k in keys:
            torch.testing.assert_close(mixed[k], lam[i] * g[k] + (1 - lam[i]) * ref[k], rtol=0, atol=1e-6)


def test_depth_mlp_uses_only_its_blocks():
    model = build_model("pmixfed-depth-mlp15", (1, 8, 8), 4)
    assert len(model_blocks(model)) == 15
    x = torch.randn(5, 1, 8, 8)
    model.active_depth = 4
    h = torch.relu(model.fc1(x.flatten(1)))
    for j in (2, 3):
        h = h + torch.relu(getattr(model, f"fc{j}")(h))
    torch.testing.assert_close(model(x), model.head(h))
    model(x).sum().backward()
    grads = {n for n, p in model.named_parameters() if p.grad is not None}
    assert grads == {f"fc{j}.{p}" for j in (1, 2, 3) for p in ("weight", "bias")} | {"head.weight", "head.bias"}
    model.active_depth = None  # full depth
    assert model(x).shape == (5, 4)
    with pytest.raises(ValueError, match="active_depth"):
        model.active_depth = 1
        model(x)


def _run(params, rounds=2):
    data = make_toy_data(num_clients=3, unseen=1)
    fn = lambda: build_model("pmixfed-depth-mlp15", data.input_shape, data.num_classes)  # noqa: E731
    settings = RunSettings(rounds=rounds, optim=OPT, progress=False)
    return run_simulation(make_algorithm("pmixfed-hetero", params), data, fn, settings), fn


def test_hetero_run_leaves_unowned_blocks_and_averages_owned_ones():
    params = {"depths": [3, 5], "mu_mode": "uniform", "lam_b": 1.0, "lam_a": 0.0, "horizon": 2}
    rec, fn = _run(params)
    torch.manual_seed(derive_seed(0, "init"))
    init = fn().state_dict()
    blocks = model_blocks(fn())
    server, clients = rec["final"]["server"]["model"], rec["final"]["clients"]
    unowned = [k for i in range(4, 14) for k in blocks[i][1]]  # depths 3, 5, 3 own blocks 1–4 and the head
    assert S.equal(server, init, unowned)
    only_client1 = [k for i in (2, 3) for k in blocks[i][1]]  # blocks 3–4: client 1 (depth 5) only
    assert S.equal(server, clients[1]["model"], only_client1)
    for r in rec["rounds"]:
        assert [r["client_metrics"][str(c)]["depth"] for c in (0, 1, 2)] == [3, 5, 3]
        assert [len(r["client_metrics"][str(c)]["lam_broadcast"]) for c in (0, 1, 2)] == [3, 5, 3]
    assert len(rec["unseen"]["before"]) == 1


def test_hetero_pmixfed_is_deterministic_and_logs_lambdas():
    a, _ = _run({"depths": [3, 7], "horizon": 2})
    b, _ = _run({"depths": [3, 7], "horizon": 2})
    assert [e["test_acc"] for e in a["evals"]] == [e["test_acc"] for e in b["evals"]]
    for r in a["rounds"]:
        assert len(r["internals"]["lam_agg"]) == 15
        m = r["client_metrics"]["1"]
        assert m["lam_broadcast"][-1] == 0.0  # the head stays personal at every depth


def test_hetero_params_validated():
    with pytest.raises(ValueError, match="depths"):
        make_algorithm("pmixfed-hetero", {"depths": [1, 3]})
    with pytest.raises(ValueError, match="beta"):
        make_algorithm("pmixfed-hetero", {"mu_mode": "beta"})
