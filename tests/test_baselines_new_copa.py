"""COPA: one round of its update against a closed form on a tiny linear model, its ensemble prediction, and a smoke
run through the engine.

The model is linear: h = A x + a (the shared feature extractor), logits c_i(h) = W_i h + b_i (client i's classifier).
Three clients start from distinct classifiers, so the frozen foreign classifiers differ from the own one and from each
other. With batch size ≥ the training split, a local epoch is one full-batch step, and the gradient of
CE(c_i(h), y) + w·Σ_{j≠i} CE(c_j(h), y) is written here in closed form (softmax minus one-hot, chained by hand, the
foreign classifiers held fixed), so a flipped sign, a classifier trained that should be frozen, the own classifier
among the foreign ones or a sum taken for a mean changes the result.
"""

from __future__ import annotations

import math

import baselines_tiny as tiny
import pytest
import torch

from pflnb.algorithms import make_algorithm
from pflnb.fl import state as S
from pflnb.fl.training import evaluate

X = [
    [[0.9, -0.4], [0.2, 1.1], [-0.7, 0.5]],
    [[1.3, 0.3], [-0.2, -0.9], [0.6, 0.8], [-1.0, 0.1]],
    [[0.4, -0.6], [-0.3, 0.7], [1.1, -0.2]],
]
Y = [[0, 1, 1], [2, 0, 0, 1], [2, 1, 2]]
N = [3.0, 4.0, 3.0]
HEAD = ("head.weight", "head.bias")
LR = 0.4


def make_ctx(epochs: int = 1):
    clients = [((X[c], Y[c]), (X[c][:2], Y[c][:2]), (X[(c + 1) % 3], Y[(c + 1) % 3])) for c in range(3)]
    return tiny.make_ctx(clients, tiny.Linear2, lr=LR, epochs=epochs, seed=3, name="copa")


def start(ctx, params=None):
    """COPA initialized, then every client given its own classifier (init + a seeded perturbation), the server's
    copies equal to them."""
    algo, w0, server, clients = tiny.start(ctx, "copa", params)
    g = torch.Generator().manual_seed(11)
    for c in range(3):
        head = {k: w0[k] + 0.8 * torch.randn(w0[k].shape, generator=g, dtype=torch.float64) for k in HEAD}
        clients[c] = {"head": head}
        server["heads"][c] = S.clone(head)
    return algo, w0, server, clients


def copa_step(body: dict, own: dict, foreign: list[dict], x, y, lr: float, weight: float, reduction: str):
    """One full-batch SGD step of COPA in closed form: (A, a, W_i, b_i) on CE(c_i(h)) + w·Σ_j CE(c_j(h)) (or the
    mean over j), the foreign (W_j, b_j) fixed."""
    A, a, W, b = body["fc1.weight"], body["fc1.bias"], own["head.weight"], own["head.bias"]
    n = len(y)
    h = x @ A.T + a
    G = (tiny.softmax(h @ W.T + b) - tiny.onehot(y)) / n  # ∂/∂(own logits)
    scale = weight / (len(foreign) if reduction == "mean" else 1.0)
    dh = G @ W
    for f in foreign:
        Gj = scale * (tiny.softmax(h @ f["head.weight"].T + f["head.bias"]) - tiny.onehot(y)) / n
        dh = dh + Gj @ f["head.weight"]  # only into h: the foreign classifier is frozen
    new_body = {"fc1.weight": A - lr * dh.T @ x, "fc1.bias": a - lr * dh.sum(0)}
    new_own = {"head.weight": W - lr * G.T @ h, "head.bias": b - lr * G.sum(0)}
    return new_body, new_own


def expected_round(w0, server, params, epochs=1):
    weight, reduction = params.get("gen_weight", 1.0), params.get("gen_reduction", "sum")
    bodies, heads = {}, {}
    for c in range(3):
        x, y = tiny.xy(make_ctx(), c)
        body = {k: w0[k] for k in ("fc1.weight", "fc1.bias")}
        own = dict(server["heads"][c])
        foreign = [server["heads"][j] for j in range(3) if j != c]
        for _ in range(epochs):
            body, own = copa_step(body, own, foreign, x, y, LR, weight, reduction)
        bodies[c], heads[c] = body, own
    return bodies, heads


PARAMS = [{}, {"gen_reduction": "mean"}, {"gen_weight": 0.3}, {"weights": "uniform"}]


@pytest.mark.parametrize("params", PARAMS, ids=str)
@pytest.mark.parametrize("epochs", [1, 2])
def test_copa_one_round_equals_the_closed_form(params, epochs):
    ctx = make_ctx(epochs)
    algo, w0, server, clients = start(ctx, params)
    ups, new_server = tiny.train_round(ctx, algo, server, clients, cids=(0, 1, 2))
    bodies, heads = expected_round(w0, server, params, epochs)
    for c in range(3):
        assert set(ups[c].message["state"]) == {"fc1.weight", "fc1.bias"}  # the feature extractor
        tiny.assert_close(ups[c].message["state"], bodies[c], f"client {c} body ")
        tiny.assert_close(ups[c].message["head"], heads[c], f"client {c} sent head ")  # uploaded ...
        tiny.assert_close(ups[c].client["head"], heads[c], f"client {c} kept head ")  # ... and kept
    w = [1.0, 1.0, 1.0] if params.get("weights") == "uniform" else N
    avg = {k: sum(w[c] * bodies[c][k] for c in range(3)) / sum(w) for k in bodies[0]}
    tiny.assert_close(new_server["model"], avg, "server body ")
    for c in range(3):  # the server holds every classifier, none of them averaged
        tiny.assert_close(new_server["heads"][c], heads[c], f"server head {c} ")


def test_copa_predicts_with_the_mean_of_every_classifiers_logits():
    ctx = make_ctx()
    algo, w0, server, clients = start(ctx)
    ups, new_server = tiny.train_round(ctx, algo, server, clients, cids=(0, 1, 2))
    bodies, heads = expected_round(w0, server, {})
    A, a = new_server["model"]["fc1.weight"], new_server["model"]["fc1.bias"]
    for c in range(3):
        x, _ = tiny.xy(ctx, c, "test")
        h = x @ A.T + a
        want = sum(h @ heads[j]["head.weight"].T + heads[j]["head.bias"] for j in range(3)) / 3
        got = tiny.predict(algo.eval_module(ctx, c, new_server, ups[c].client), ctx.client(c).test.x)
        assert tiny.max_err(got, want) <= tiny.TOL
        unseen = tiny.predict(algo.unseen_module(ctx, new_server, ctx.client(c), True), ctx.client(c).test.x)
        assert tiny.max_err(unseen, want) <= tiny.TOL  # a held-out client: the same ensemble, no fine-tuning
    # the reported loss is the cross-entropy of the averaged logits (not of the averaged probabilities)
    x, y = tiny.xy(ctx, 0, "test")
    h = x @ A.T + a
    z = sum(h @ heads[j]["head.weight"].T + heads[j]["head.bias"] for j in range(3)) / 3
    plan = algo.eval_plan(ctx, 0, new_server, ups[0].client)
    assert plan.fuse_reduction == "mean" and len(plan.fuse) == 3
    r = evaluate(algo.eval_module(ctx, 0, new_server, ups[0].client), ctx.client(0).test)
    assert abs(r["loss"] - float(torch.nn.functional.cross_entropy(z, y))) <= tiny.TOL
    p = sum(tiny.softmax(h @ heads[j]["head.weight"].T + heads[j]["head.bias"]) for j in range(3)) / 3
    assert abs(r["loss"] - float(torch.nn.functional.nll_loss(torch.log(p), y))) > 1e-3  # not the mean of softmax


def test_the_closed_form_cases_are_not_vacuous():
    """The foreign classifiers move the feature extractor, sum and mean differ, and the own classifier moves."""
    ctx = make_ctx()
    _, w0, server, _ = start(ctx)
    x, y = tiny.xy(ctx, 0)
    body = {k: w0[k] for k in ("fc1.weight", "fc1.bias")}
    foreign = [server["heads"][1], server["heads"][2]]
    own = server["heads"][0]
    b_sum, h_sum = copa_step(body, own, foreign, x, y, LR, 1.0, "sum")
    b_mean, _ = copa_step(body, own, foreign, x, y, LR, 1.0, "mean")
    b_none, _ = copa_step(body, own, [], x, y, LR, 1.0, "sum")
    b_self, _ = copa_step(body, own, [own, foreign[1]], x, y, LR, 1.0, "sum")
    for other in (b_mean, b_none, b_self):
        assert float((b_sum["fc1.weight"] - other["fc1.weight"]).abs().max()) > 1e-3
    assert float((h_sum["head.weight"] - own["head.weight"]).abs().max()) > 1e-3


def test_copa_rejects_bad_parameters():
    with pytest.raises(ValueError, match="gen_reduction"):
        make_algorithm("copa", {"gen_reduction": "max"})
    with pytest.raises(ValueError, match="gen_weight"):
        make_algorithm("copa", {"gen_weight": -1.0})
    with pytest.raises(ValueError, match="weights"):
        make_algorithm("copa", {"weights": "equal"})


def test_copa_smoke_run_through_the_engine(tmp_path):
    rec = tiny.smoke_run("copa", tmp_path)
    metrics = rec["rounds"][-1]["client_metrics"].values()
    assert all(math.isfinite(m["loss"]) and math.isfinite(m["gen"]) for m in metrics)
