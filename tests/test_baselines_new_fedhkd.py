"""FedHKD: its hyper-knowledge, the server's class-wise aggregation and one local step with the distillation terms,
against closed forms on a tiny linear model; its personalized evaluation; and a smoke run through the engine.

The model is linear: h = A x + a (the representation), logits g = W h + b (the classifier). With batch size ≥ the
training split, a local epoch is one full-batch step. Round 1 trains client 0 alone (plain cross-entropy), so the
global hyper-knowledge covers its classes 0 and 1 only; in round 2 client 1, which also holds class 2, distills toward
it: its class-2 sample is left out of the representation term, class 2 out of the soft-prediction term. The
gradients of both terms (the paper's norms and the code's KL and MSE) are written here in closed form (softmax
Jacobian and norm derivatives chained by hand), so a flipped sign, a swapped KL argument, τ multiplied for divided,
the wrong class's representation or an unweighted aggregation changes the result.
"""

from __future__ import annotations

import math

import baselines_tiny as tiny
import pytest
import torch

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.fedhkd import aggregate_hyper_knowledge
from pflnb.fl.training import evaluate

K = 3
LR = 0.4
# Every class has two samples wherever it is held: a class mean of one sample, trained by one client alone, would give
# Q^j = Q_τ(G(H^j)) exactly, the point where the paper's unsquared norm has no gradient (rounding picks a direction).
X0, Y0 = [[0.9, -0.4], [0.2, 1.1], [-0.7, 0.5], [1.2, 0.6]], [0, 1, 1, 0]
X1, Y1 = [[1.3, 0.3], [-0.2, -0.9], [0.6, 0.8], [-1.0, 0.1], [0.3, -1.2], [-0.5, 0.9]], [2, 0, 0, 1, 2, 1]
CLIENTS = [((X0, Y0), (X0[:2], Y0[:2]), (X1, Y1)), ((X1, Y1), (X1[:2], Y1[:2]), (X0, Y0))]


def make_ctx():
    return tiny.make_ctx(CLIENTS, lr=LR, seed=4, name="hkd")


def soft(z: torch.Tensor, tau: float) -> torch.Tensor:
    return tiny.softmax(z / tau)


def knowledge(w: dict, x: torch.Tensor, y: torch.Tensor, tau: float) -> dict:
    """Per class: count, mean representation, mean soft prediction of the linear model ``w`` (zero rows if absent)."""
    h = x @ w["fc1.weight"].T + w["fc1.bias"]
    q = soft(h @ w["head.weight"].T + w["head.bias"], tau)
    n = torch.tensor([float((y == j).sum()) for j in range(K)], dtype=torch.float64)
    hm = torch.stack([h[y == j].mean(0) if n[j] else torch.zeros(3, dtype=torch.float64) for j in range(K)])
    qm = torch.stack([q[y == j].mean(0) if n[j] else torch.zeros(K, dtype=torch.float64) for j in range(K)])
    return {"n": n, "h": hm, "q": qm}


def unit(v: torch.Tensor) -> torch.Tensor:
    """Rows of ``v`` divided by their norms: the gradient of ‖v‖ (away from 0, where the unsquared norm has no
    gradient: every class here has two samples, so no distance is 0)."""
    return v / torch.linalg.vector_norm(v, dim=1, keepdim=True)


def hkd_step(w: dict, x, y, hk: dict, lr: float, lam: float, gamma: float, tau: float, distance: str) -> dict:
    """One full-batch SGD step of FedHKD's loss in closed form."""
    A, a, W, b = w["fc1.weight"], w["fc1.bias"], w["head.weight"], w["head.bias"]
    H, Q, known = hk["H"], hk["Q"], hk["known"]
    n, d = len(y), A.shape[0]
    h = x @ A.T + a
    G = (tiny.softmax(h @ W.T + b) - tiny.onehot(y)) / n  # cross-entropy, ∂/∂g
    dh = G @ W
    dW, db = G.T @ h, G.sum(0)
    # soft-prediction term on the classifier applied to H (H fixed): ∂/∂z_j of the per-class distance
    s = soft(H @ W.T + b, tau)
    nk = known.sum()
    if distance == "l2":
        u = unit(s - Q)  # ∂‖s − Q‖/∂s
        dz = (s * u - s * (s * u).sum(1, keepdim=True)) / tau  # softmax(z/τ) Jacobian
        dz = lam * known[:, None] * dz / nk
    else:
        dz = lam * known[:, None] * (s - Q) / tau / (nk * K)  # ∂ Σ_c Q_c (log Q_c − log s_c)/∂z, rows of Q sum to 1
    dW, db = dW + dz.T @ H, db + dz.sum(0)
    # representation term: ∂/∂h_i, samples of a class without global knowledge left out
    diff = h - H[y]
    ky = known[y][:, None]
    if distance == "l2":
        dh = dh + gamma * ky * unit(diff) / n
    else:
        dh = dh + gamma * ky * 2 * diff / (n * d)
    return {
        "fc1.weight": A - lr * dh.T @ x,
        "fc1.bias": a - lr * dh.sum(0),
        "head.weight": W - lr * dW,
        "head.bias": b - lr * db,
    }


PARAMS = [
    {},
    {"distance": "code"},
    {"lam": 0.7, "gamma": 0.0, "temperature": 2.0},
    {"lam": 0.0, "gamma": 0.6},
    {"lam": 0.8, "gamma": 0.4, "temperature": 0.3, "distance": "code"},
]


def defaults(params: dict) -> tuple[float, float, float, str]:
    return params.get("lam", 0.05), params.get("gamma", 0.05), params.get("temperature", 0.5), params.get("distance", "l2")


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_fedhkd_two_rounds_equal_the_closed_form(params):
    lam, gamma, tau, distance = defaults(params)
    ctx = make_ctx()
    algo, w0, server, clients = tiny.start(ctx, "fedhkd", params)
    assert server["hk"] is None

    # round 1: client 0 alone, plain cross-entropy; it sends its model and its hyper-knowledge
    ups, server1 = tiny.train_round(ctx, algo, server, clients, cids=(0,))
    x0, y0 = tiny.xy(ctx, 0)
    w1 = tiny.linear2_step(w0, x0, y0, LR)
    tiny.assert_close(ups[0].message["state"], w1, "round-1 model ")
    tiny.assert_close(ups[0].client["model"], w1, "kept model ")
    k0 = knowledge(w1, x0, y0, tau)
    tiny.assert_close(ups[0].message["hk"], k0, "client 0 hyper-knowledge ")
    hk = {"H": k0["h"], "Q": k0["q"], "known": torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)}
    tiny.assert_close(server1["hk"], hk, "global hyper-knowledge after round 1 ")
    tiny.assert_close(server1["model"], w1, "global model ")
    clients[0] = ups[0].client

    # round 2: client 1 (classes 0, 1 and 2, two samples each) from the global model, with both terms
    ctx.round = 2
    ups2, server2 = tiny.train_round(ctx, algo, server1, clients, cids=(1,))
    x1, y1 = tiny.xy(ctx, 1)
    w2 = hkd_step(w1, x1, y1, hk, LR, lam, gamma, tau, distance)
    tiny.assert_close(ups2[1].message["state"], w2, "round-2 model ")
    k1 = knowledge(w2, x1, y1, tau)
    tiny.assert_close(ups2[1].message["hk"], k1, "client 1 hyper-knowledge ")
    # the classes client 1 holds now come from its upload alone; none is kept from round 1 (it holds all three)
    tiny.assert_close(server2["hk"], {"H": k1["h"], "Q": k1["q"], "known": torch.ones(K, dtype=torch.float64)})


def test_server_aggregates_hyper_knowledge_class_by_class_weighted_by_samples():
    g = torch.Generator().manual_seed(2)
    rand = lambda *s: torch.rand(*s, generator=g, dtype=torch.float64)  # noqa: E731
    previous = {"H": rand(4, 3), "Q": rand(4, 4), "known": torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64)}
    ups = [
        {"n": torch.tensor([2.0, 0.0, 0.0, 0.0], dtype=torch.float64), "h": rand(4, 3), "q": rand(4, 4)},
        {"n": torch.tensor([1.0, 3.0, 0.0, 0.0], dtype=torch.float64), "h": rand(4, 3), "q": rand(4, 4)},
    ]
    out = aggregate_hyper_knowledge(previous, ups)
    for key, name in (("h", "H"), ("q", "Q")):
        want = previous[name].clone()
        want[0] = (2 * ups[0][key][0] + 1 * ups[1][key][0]) / 3  # held by both: weighted by their samples
        want[1] = ups[1][key][1]  # held by the second client only
        # class 2: held by no client this round, kept; class 3: never held, stays as it was
        assert tiny.max_err(out[name], want) <= tiny.TOL
    assert out["known"].tolist() == [1.0, 1.0, 1.0, 0.0]
    first = aggregate_hyper_knowledge(None, ups)
    assert first["known"].tolist() == [1.0, 1.0, 0.0, 0.0] and float(first["H"][2:].abs().max()) == 0.0


def test_fedhkd_evaluates_each_clients_local_model_and_records_the_global_one():
    ctx = make_ctx()
    algo, w0, server, clients = tiny.start(ctx, "fedhkd")
    ups, server1 = tiny.train_round(ctx, algo, server, clients, cids=(0, 1))
    for c in (0, 1):  # each client: its own model after local training, not the average
        x, y = tiny.xy(ctx, c)
        w1 = tiny.linear2_step(w0, x, y, LR)
        xt, _ = tiny.xy(ctx, c, "test")
        got = tiny.predict(algo.eval_module(ctx, c, server1, ups[c].client), ctx.client(c).test.x)
        assert tiny.max_err(got, tiny.linear2_logits(w1, xt)) <= tiny.TOL
        assert tiny.max_err(got, tiny.linear2_logits(server1["model"], xt)) > 1e-3
    assert algo.eval_state(ctx, 1, server1, {}) is server1["model"]  # before its first round: the global model
    clients = [u.client for u in ups.values()]
    extra = algo.extra_metrics(ctx, server1, clients)
    want = [evaluate(ctx.load(server1["model"]), ctx.client(c).test)["acc"] for c in (0, 1)]
    assert extra["global_test_acc"] == want and len(extra["global_val_acc"]) == 2


def test_hyper_knowledge_is_computed_in_eval_mode():
    """On a BN network left in train mode, the class means are those of the eval-mode model (running statistics)."""
    from pflnb.algorithms.fedhkd import local_hyper_knowledge
    from pflnb.models import build_model

    torch.manual_seed(0)
    model = build_model("small-bn-cnn", (3, 8, 8), 4).double()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(10, 3, 8, 8, dtype=torch.float64)
    y = torch.tensor([0, 1, 1, 3, 0, 3, 3, 1, 0, 0])
    split = type("S", (), {"x": x, "y": y})()
    model.train()
    got = local_hyper_knowledge(model, split, 4, 0.5, block=4)
    model.eval()
    with torch.no_grad():
        h = model.features(x)
        q = torch.softmax(model.head(h) / 0.5, 1)
    for j in range(4):
        want_h = h[y == j].mean(0) if (y == j).any() else torch.zeros(h.shape[1], dtype=torch.float64)
        want_q = q[y == j].mean(0) if (y == j).any() else torch.zeros(4, dtype=torch.float64)
        assert tiny.max_err(got["h"][j], want_h) <= tiny.TOL and tiny.max_err(got["q"][j], want_q) <= tiny.TOL
    assert got["n"].tolist() == [4.0, 3.0, 0.0, 3.0]


def test_the_closed_form_cases_are_not_vacuous():
    """Each term moves the step, the two distances differ, and the masked class matters."""
    ctx = make_ctx()
    w0 = ctx.state_of(ctx.model)
    x0, y0 = tiny.xy(ctx, 0)
    k0 = knowledge(tiny.linear2_step(w0, x0, y0, LR), x0, y0, 0.5)
    hk = {"H": k0["h"], "Q": k0["q"], "known": torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)}
    x1, y1 = tiny.xy(ctx, 1)
    base = hkd_step(w0, x1, y1, hk, LR, 0.0, 0.0, 0.5, "l2")
    for lam, gamma, distance in ((0.5, 0.0, "l2"), (0.0, 0.5, "l2"), (0.5, 0.0, "code"), (0.0, 0.5, "code")):
        w = hkd_step(w0, x1, y1, hk, LR, lam, gamma, 0.5, distance)
        key = "head.weight" if lam else "fc1.weight"
        assert float((w[key] - base[key]).abs().max()) > 1e-4, (lam, gamma, distance)
    l2 = hkd_step(w0, x1, y1, hk, LR, 0.5, 0.5, 0.5, "l2")
    code = hkd_step(w0, x1, y1, hk, LR, 0.5, 0.5, 0.5, "code")
    assert float((l2["fc1.weight"] - code["fc1.weight"]).abs().max()) > 1e-4
    unmasked = {**hk, "known": torch.ones(K, dtype=torch.float64)}
    assert float((hkd_step(w0, x1, y1, unmasked, LR, 0.5, 0.5, 0.5, "l2")["fc1.weight"] - l2["fc1.weight"]).abs().max()) > 1e-4


def test_fedhkd_rejects_bad_parameters():
    with pytest.raises(ValueError, match="distance"):
        make_algorithm("fedhkd", {"distance": "cosine"})
    with pytest.raises(ValueError, match="temperature"):
        make_algorithm("fedhkd", {"temperature": 0.0})
    with pytest.raises(ValueError, match="lam and gamma"):
        make_algorithm("fedhkd", {"gamma": -0.1})


def test_fedhkd_smoke_run_through_the_engine(tmp_path):
    rec = tiny.smoke_run("fedhkd", tmp_path)
    metrics = rec["rounds"][-1]["client_metrics"].values()
    assert all(math.isfinite(m["loss"]) for m in metrics)
    assert all(math.isfinite(m["hk_soft"]) and math.isfinite(m["hk_rep"]) for m in metrics)  # the terms ran
    assert len(rec["evals"][-1]["extra"]["global_test_acc"]) == len(rec["clients"])


def test_a_term_reading_its_own_head_after_the_heads_pass_is_refused():
    """On the sequential path the step's train-mode pass updates the head's BN statistics in place; a term that reads
    ``b.own_head`` must be built before it (``before_head``), or the two runners would see different statistics."""
    import dataclasses

    from pflnb.algorithms.fedhkd import HyperKnowledgeDistill
    from pflnb.fl.plan import LocalPlan, Phase
    from pflnb.fl.sequential import run_plan

    late = dataclasses.dataclass(frozen=True)(type("Late", (HyperKnowledgeDistill,), {"before_head": False}))
    ctx = make_ctx()
    hk = {"H": torch.ones(K, 3, dtype=torch.float64), "Q": torch.full((K, K), 1 / K, dtype=torch.float64)}
    hk["known"] = torch.ones(K, dtype=torch.float64)
    plan = LocalPlan(0, {"main": ctx.state_of(ctx.model)}, (Phase(ctx.optim, terms=(late(0.5, 0.5, 0.5),)),), {"hk": hk})
    with pytest.raises(RuntimeError, match="before_head"):
        run_plan(ctx, plan)
