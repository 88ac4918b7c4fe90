"""pFedHN: one round of its hypernetwork update against an expected state written here, and a smoke run.

The target model is linear (h = A x + a, logits z = W h + b) and the hypernetwork tiny (e = 2, H = 3, one
hidden-to-hidden layer). Here: the generated θ_i = h(v_i; φ) by plain tensor arithmetic, the local result (one
full-batch SGD step, gradient in closed form), and the server step by ``torch.autograd.grad`` of a hand-written
Σ_k ⟨θ_k(φ, v), −Δθ_k⟩, with the heads' weight gradient also in closed form (−Δθ_k f(v)^⊤), so a flipped sign, a
wrong Jacobian, a sum instead of the mean over clients, or embeddings left unchanged fail.
"""

from __future__ import annotations

import math

import baselines_tiny as tiny
import pytest
import torch

from pflnb.algorithms import make_algorithm
from pflnb.fl.engine import Context

K = 3
SHAPES = {"fc1.weight": (3, 2), "fc1.bias": (3,), "head.weight": (K, 3), "head.bias": (K,)}
HN = {"embed_dim": 2, "hidden": 3, "n_hidden": 1, "hn_lr": 0.3, "embed_lr": 0.7, "hn_momentum": 0.0}
sgd_step = tiny.linear2_step  # one full-batch SGD step on the mean cross-entropy of the linear model, closed form


def features(phi: dict, v: torch.Tensor) -> torch.Tensor:
    """f(v) = W1 relu(W0 v + b0) + b1."""
    h0 = phi["mlp.0.weight"] @ v + phi["mlp.0.bias"]
    return phi["mlp.1.weight"] @ torch.clamp(h0, min=0) + phi["mlp.1.bias"]


def hyper(phi: dict, v: torch.Tensor) -> dict:
    """θ_k = A_k f(v) + a_k, reshaped."""
    f = features(phi, v)
    return {k: (phi[f"heads.{k}.weight"] @ f + phi[f"heads.{k}.bias"]).reshape(s) for k, s in SHAPES.items()}


def setup(params=None):
    ctx = tiny.make_ctx()
    algo, _, server, clients = tiny.start(ctx, "pfedhn", {**HN, **(params or {})})
    return ctx, algo, server, clients


def expected_round(ctx: Context, phi: dict, cids=(0, 1), lr_phi=HN["hn_lr"], lr_v=HN["embed_lr"]):
    """θ_i, θ̃_i, Δθ_i, the gradients (autograd of the hand-written function) and the new φ and embeddings."""
    keys = [k for k in phi if k != "embeddings"]
    theta, local, delta = {}, {}, {}
    g_phi = {k: torch.zeros_like(phi[k]) for k in keys}
    g_v = torch.zeros_like(phi["embeddings"])
    for c in cids:
        theta[c] = hyper(phi, phi["embeddings"][c])
        local[c] = sgd_step(theta[c], *tiny.xy(ctx, c), ctx.optim.lr)
        delta[c] = {k: local[c][k] - theta[c][k] for k in SHAPES}
        ps = {k: phi[k].clone().requires_grad_(True) for k in keys}
        v = phi["embeddings"][c].clone().requires_grad_(True)
        th = hyper(ps, v)
        surrogate = sum((th[k] * -delta[c][k]).sum() for k in SHAPES)
        grads = torch.autograd.grad(surrogate, [ps[k] for k in keys] + [v])
        for k, g in zip(keys, grads):
            g_phi[k] += g / len(cids)
        g_v[c] = grads[-1]
        # the heads' weight gradient in closed form: (−Δθ_k) f(v)^⊤, averaged over the clients
        f = features(phi, phi["embeddings"][c])
        for k in SHAPES:
            closed = torch.outer(-delta[c][k].reshape(-1), f)
            assert torch.allclose(grads[keys.index(f"heads.{k}.weight")], closed, atol=1e-12, rtol=0)
    new = {k: phi[k] - lr_phi * g_phi[k] for k in keys}
    new["embeddings"] = phi["embeddings"] - lr_v * g_v
    return theta, local, delta, g_phi, g_v, new


def test_pfedhn_one_round_equals_the_expected_state():
    ctx, algo, server, clients = setup()
    phi = server["phi"]
    assert phi["embeddings"].shape == (2, 2) and phi["mlp.0.weight"].shape == (3, 2) and phi["mlp.1.weight"].shape == (3, 3)
    assert phi["heads.fc1.weight.weight"].shape == (6, 3) and phi["heads.head.bias.bias"].shape == (K,)
    theta, local, delta, _, g_v, new = expected_round(ctx, phi)
    ups = {}
    for c in (0, 1):
        tiny.assert_close(algo.eval_state(ctx, c, server, clients[c]), theta[c], f"θ_{c} ")  # generated θ_i = h(v_i; φ)
        ups[c] = algo.local_train(ctx, c, server, clients[c])
        tiny.assert_close(ups[c].message["delta"], delta[c], f"Δθ_{c} ")  # the local result, sent as θ̃_i − θ_i
    new_server = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})
    tiny.assert_close(new_server["phi"], new, "new φ ")
    assert all(float(g.abs().max()) > 1e-3 for g in g_v)  # both embeddings move
    for c in (0, 1):  # evaluation: the new h(v_i; φ)
        tiny.assert_close(algo.eval_state(ctx, c, new_server, ups[c].client), hyper(new, new["embeddings"][c]), f"θ'_{c} ")


def test_the_expected_state_is_not_vacuous():
    """Some of the MLP's first-layer units are cut by the ReLU; the φ gradient differs between the clients."""
    ctx, _, server, _ = setup()
    phi = server["phi"]
    pre = [phi["mlp.0.weight"] @ phi["embeddings"][c] + phi["mlp.0.bias"] for c in (0, 1)]
    assert any(bool((p < 0).any()) for p in pre) and any(bool((p > 0).any()) for p in pre)
    _, _, _, g_one, _, _ = expected_round(ctx, phi, cids=(0,))
    _, _, _, g_two, _, _ = expected_round(ctx, phi, cids=(1,))
    assert float((g_one["mlp.0.weight"] - g_two["mlp.0.weight"]).abs().max()) > 1e-4


def test_momentum_carries_the_first_step_into_the_second():
    ctx, algo, server, clients = setup({"hn_momentum": 0.5})
    ups = {c: algo.local_train(ctx, c, server, clients[c]) for c in (0, 1)}
    s1 = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})
    _, _, _, g1, gv1, new1 = expected_round(ctx, server["phi"])
    tiny.assert_close(s1["phi"], new1, "step 1 ")  # the first step is the plain one (b = g)
    s2 = algo.aggregate(ctx, s1, {c: u.message for c, u in ups.items()})  # the same Δθ again, at the new φ
    keys = [k for k in g1 if k != "embeddings"]
    msgs = {c: ups[c].message["delta"] for c in (0, 1)}  # the round-1 Δθ, now at φ1
    g2 = {k: torch.zeros_like(new1[k]) for k in keys}
    gv2 = torch.zeros_like(new1["embeddings"])
    for c in (0, 1):
        ps = {k: new1[k].clone().requires_grad_(True) for k in keys}
        v = new1["embeddings"][c].clone().requires_grad_(True)
        th = hyper(ps, v)
        out = torch.autograd.grad(sum((th[k] * -msgs[c][k]).sum() for k in SHAPES), [ps[k] for k in keys] + [v])
        for k, g in zip(keys, out):
            g2[k] += g / 2
        gv2[c] = out[-1]
    want = {k: new1[k] - HN["hn_lr"] * (0.5 * g1[k] + g2[k]) for k in keys}
    want["embeddings"] = new1["embeddings"] - HN["embed_lr"] * (0.5 * gv1 + gv2)
    tiny.assert_close(s2["phi"], want, "step 2 ")


def test_unseen_client_gets_the_mean_embedding_and_fine_tunes_only_it():
    ctx, algo, server, _ = setup()
    phi = server["phi"]
    data = ctx.client(1)
    x, y = tiny.xy(ctx, 1)
    xt, _ = tiny.xy(ctx, 1, "test")
    vbar = phi["embeddings"].mean(0)

    def logits(v, inp):
        return tiny.linear2_logits(hyper(phi, v), inp)

    v = vbar.clone().requires_grad_(True)
    loss = -torch.log(tiny.softmax(logits(v, x))[torch.arange(len(y)), y]).mean()
    (g,) = torch.autograd.grad(loss, v)
    tuned = vbar - ctx.optim.lr * g  # one epoch = one full-batch SGD step on v, φ frozen
    for finetune, emb in ((False, vbar), (True, tuned)):
        got = tiny.predict(algo.unseen_module(ctx, server, data, finetune), data.test.x)
        assert tiny.max_err(got, logits(emb, xt).detach()) <= tiny.TOL
    assert float(g.abs().max()) > 1e-4
    assert torch.equal(server["phi"]["embeddings"].mean(0), vbar)  # nothing of the server is trained


def test_pfedhn_defaults_and_bad_parameters():
    ctx = tiny.make_ctx()
    algo = make_algorithm("pfedhn")
    assert (algo.params.hidden, algo.params.n_hidden, algo.params.hn_lr) == (100, 3, 1e-2)
    assert algo.embed_dim(ctx) == 1  # ⌊1 + N/4⌋ with N = 2
    for bad in ({"hidden": 0}, {"hn_lr": 0.0}, {"hn_momentum": 1.0}, {"embed_dim": 0}, {"n_hidden": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            make_algorithm("pfedhn", bad)


def test_pfedhn_smoke_run_through_the_engine(tmp_path):
    from pflnb.papers.pmixfed.paper import PAPER

    cfg = next(cfg for lab, cfg in PAPER.experiment("table1").runs("smoke", seeds=[0]) if lab["label"] == "pfedhn")
    assert cfg.model == "pmixfed-cnn"
    rec = tiny.smoke_run("pfedhn", tmp_path, cfg)
    assert all(math.isfinite(a) for v in rec["unseen"].values() for a in v)
