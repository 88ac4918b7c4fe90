"""FedSplit / FedFac: factor analysis, the neuron-level split algorithm, the §3.4 DGP and the §3 theory."""

import numpy as np
import pytest
import torch
from conftest import make_toy_data
from sklearn.decomposition import FactorAnalysis

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.fedfac import merge, split_layers
from pflnb.data.simulation_fedfac import simulate, to_federated
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl.engine import Context
from pflnb.models import build_model
from pflnb.papers.fedfac import fedsplit as T
from pflnb.theory import factor as FA

OPT = OptimConfig(lr=0.05, batch_size=8)


def _run(method, data, params=None, model="mlp2", rounds=2, **kw):
    settings = RunSettings(rounds=rounds, optim=OPT, progress=False, **kw)
    fn = lambda: build_model(model, data.input_shape, data.num_classes)  # noqa: E731
    return run_simulation(make_algorithm(method, params), data, fn, settings)


def _ctx(data, model="mlp2"):
    return Context(data, lambda: build_model(model, data.input_shape, data.num_classes), OPT, 0, torch.device("cpu"))


def _oracle(p, n_clients=20, seed=0):
    sim = simulate(n_clients=n_clients, n_per_client=4, d=100, m=200, shared_frac=p, alpha_cov=0.4, seed=seed)
    return sim, FA.stack_clients([sim.client_weights(c) for c in range(n_clients)])


# ---- factor analysis --------------------------------------------------------------------------------


def test_n_factors_and_quantile_split():
    assert FA.n_factors(np.array([4.0, 3.0, 2.0, 1.0]), 0.5) == 2  # 7/10 >= 0.5, 4/10 < 0.5
    assert FA.n_factors(np.array([4.0, 3.0, 2.0, 1.0]), 0.4) == 1
    assert FA.n_factors(np.array([1.0, 2.0, 3.0, 4.0]), 0.95) == 4
    nu = np.arange(10.0)
    assert FA.quantile_split(nu, 0.0).all() and not FA.quantile_split(nu, 1.0).any()
    assert FA.quantile_split(nu, 0.5).sum() == 5 and FA.quantile_split(nu, 0.5)[-5:].all()
    with pytest.raises(ValueError, match="kappa"):
        FA.n_factors(nu, 0.0)


def test_correlation_matrix_and_dead_columns():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(50, 4))
    z[:, 2] = 3.0
    r, dead = FA.correlation_matrix(z)
    keep = [0, 1, 3]
    assert np.allclose(r[np.ix_(keep, keep)], np.corrcoef(z[:, keep], rowvar=False), atol=1e-12)
    assert dead.tolist() == [False, False, True, False] and r[2, 2] == 0.0
    res = FA.factor_analysis(z, 0.85)
    assert res.communalities[2] == 0.0 and ((res.communalities >= 0) & (res.communalities <= 1)).all()


def test_stack_clients_layout():
    w = [np.arange(6.0).reshape(3, 2), 10 + np.arange(6.0).reshape(3, 2)]  # (d_l=3 elements, fan_in=2)
    z = FA.stack_clients(w)
    assert z.shape == (4, 3)  # rows = (client, fan-in), columns = elements
    assert z[:, 1].tolist() == [2.0, 3.0, 12.0, 13.0]


def test_communalities_invariant_to_varimax_and_paf_fixed_point():
    _, z = _oracle(0.5, n_clients=10)
    res = FA.factor_analysis(z, 0.75, max_iter=200, tol=1e-7)
    rot = FA.varimax(res.loadings)
    assert np.allclose(FA.communalities(rot), FA.communalities(res.loadings), atol=1e-10)
    assert not np.allclose(rot, res.loadings)  # the rotation did change the loadings
    r, _ = FA.correlation_matrix(z)  # PAF fixed point: A are the top-G eigen-loadings of R − diag(1 − ν)
    a = FA._top_loadings(r - np.diag(np.clip(1 - FA.communalities(res.loadings), 0, 1)), res.n_factors)
    assert np.allclose(FA.communalities(a), FA.communalities(res.loadings), atol=1e-3)


def test_paf_ranking_agrees_with_sklearn_factor_analysis():
    sim, z = _oracle(0.5, n_clients=5)
    z = z[:, ::4]  # 50 elements keep sklearn fast
    res = FA.factor_analysis(z, 0.75)
    zs = (z - z.mean(0)) / z.std(0)
    sk = FactorAnalysis(n_components=res.n_factors, random_state=0, rotation="varimax").fit(zs)
    nu_sk = (sk.components_**2).sum(0)
    rank = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    assert np.corrcoef(rank(res.communalities), rank(nu_sk))[0, 1] > 0.9
    truth = sim.true_shared[::4]
    assert abs(FA.auc(res.communalities, truth) - FA.auc(nu_sk, truth)) < 0.05


@pytest.mark.parametrize("p", [0.25, 0.5, 0.75])
def test_fa_recovers_true_split_of_the_simulation(p):
    sim, z = _oracle(p)
    for kappa in (0.75, 0.85):
        rec = FA.recovery(FA.factor_analysis(z, kappa).communalities, sim.true_shared)
        assert rec["auc"] >= 0.95 and rec["accuracy"] >= 0.95, (p, kappa, rec)


def test_auc_limits():
    assert FA.auc(np.array([3.0, 4.0, 1.0, 2.0]), np.array([1, 1, 0, 0])) == 1.0
    assert FA.auc(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 1, 0, 0])) == 0.0
    assert FA.auc(np.ones(4), np.array([1, 0, 1, 0])) == 0.5


# ---- the §3.4 DGP ------------------------------------------------------------------------------------


def test_simulation_dgp_shapes_and_labels():
    sim = simulate(n_clients=30, n_per_client=50, d=20, m=40, shared_frac=0.25, alpha_cov=0.4, seed=1)
    assert sim.d1 == 12 and sim.d2 == 8 and sim.m1 == 30 and sim.true_shared.sum() == 10
    assert all(abs(y.mean() - 0.5) <= 0.02 for y in sim.y)  # centered: balanced per client
    w0, w1 = sim.client_weights(0), sim.client_weights(1)
    assert np.array_equal(w0[30:], w1[30:]) and not np.allclose(w0[:30], w1[:30])  # shared units identical
    literal = simulate(n_clients=30, n_per_client=50, d=20, m=40, shared_frac=0.25, alpha_cov=0.4, center=False, seed=1)
    majority = np.array([max(y.mean(), 1 - y.mean()) for y in literal.y])
    assert np.median(majority) >= 0.9  # spec A17: the literal rule gives nearly one class per client
    fd = to_federated(sim, seed=0)
    assert fd.num_clients == 30 and fd.input_shape == (1, 1, 20)
    assert sum(len(c.train) + len(c.val) + len(c.test) for c in fd.clients) == 30 * 50


# ---- theory -----------------------------------------------------------------------------------------


def test_kernels_eigenvalue_order_and_finite_width():
    for seed in range(3):
        d = T.theory_data(seed=seed)
        ev = T.kernel_eigs(d)
        assert ev["lambda_s"] > 0 and ev["lambda_p"] >= ev["lambda_s"] - 1e-12  # Cauchy interlacing
    d = T.theory_data(n_clients=2, n_per_client=5, seed=0)
    w = np.random.default_rng(0).normal(size=(20000, d.x.shape[1]))
    assert np.abs(T.empirical_gram(d.x, w) - T.relu_kernel(d.x)).max() < 0.02


def test_theorem1_fedsplit_faster_and_below_bound():
    for seed in range(2):
        d = T.theory_data(seed=seed)
        r = T.rates(d)
        split = T.train_two_layer(d, "fedsplit", m1=1000, m2=1000, rounds=40, seed=seed)
        avg = T.train_two_layer(d, "fedavg", m1=1000, m2=1000, rounds=40, seed=seed)
        t = np.arange(41)
        assert split[-1] / split[0] < 0.5 * avg[-1] / avg[0]
        assert (split <= split[0] * r["bound_fedsplit"] ** t + 1e-9).all()
        assert (avg <= avg[0] * r["bound_fedavg"] ** t + 1e-9).all()
        assert r["radius_fedsplit"] < r["radius_fedavg"] < 1


def test_theorem2_term_grows_with_clients():
    b = [np.mean([T.thm2_term(T.theory_data(c, 120 // c, seed=s)) for s in range(3)]) for c in (2, 4, 10, 20)]
    assert all(x < y for x, y in zip(b, b[1:])) and b[0] > 1.0  # increasing; vacuous for a [0, 1] loss


# ---- the algorithm ----------------------------------------------------------------------------------


def _evals(rec):
    return [(e["test_acc"], e["test_loss"]) for e in rec["evals"]]


def test_all_shared_is_fedavg_and_all_personal_is_lg_fedavg(toy_data):
    assert _evals(_run("fedfac", toy_data, {"layers": (1, 2), "q": 0.0, "max_iter": 3})) == _evals(_run("fedavg", toy_data))
    assert _evals(_run("fedfac", toy_data, {"layers": (1, 2), "q": 1.0, "mode": "static", "max_iter": 3})) == _evals(
        _run("lg-fedavg", toy_data)
    )


def test_shared_rows_are_weighted_average_and_private_rows_stay(toy_data):
    data = make_toy_data(num_clients=3, n=24 + 0)
    data.clients[0].train.x, data.clients[0].train.y = data.clients[0].train.x[:10], data.clients[0].train.y[:10]
    ctx = _ctx(data)
    shared = (0, 3, 5, 7)
    algo = make_algorithm("fedfac", {"layers": (1,), "partition": "given", "given": shared})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    mask = server["masks"]["fc1"]
    ups = {c: algo.local_train(ctx, c, server, clients[c]) for c in range(3)}
    for up in ups.values():  # only the shared rows of fc1 leave the client
        assert set(up.message["rows"]) == {"fc1.weight", "fc1.bias"}
        assert up.message["rows"]["fc1.weight"].shape[0] == len(shared)
        assert "fc1.weight" not in up.message["state"]
    new = algo.aggregate(ctx, server, {c: u.message for c, u in ups.items()})
    n = torch.tensor([float(len(data.clients[c].train)) for c in range(3)], dtype=torch.float64)
    for k in ("fc1.weight", "fc1.bias"):
        stacked = torch.stack([ups[c].client["store"][k].double() for c in range(3)])
        expect = (stacked * (n / n.sum()).reshape(-1, *[1] * (stacked.dim() - 1))).sum(0)
        assert torch.allclose(new["model"][k][mask].double(), expect[mask], atol=1e-6)
        assert torch.equal(new["model"][k][~mask], server["model"][k][~mask])  # personal rows: server untouched
    layers = split_layers(ctx.model, ctx.layers, (1,), False)
    for c in range(3):  # each client evaluates its own personal rows and the averaged shared rows
        st = merge(new["model"], ups[c].client["store"], new["masks"], layers, [])
        assert torch.equal(st["fc1.weight"][~mask], ups[c].client["store"]["fc1.weight"][~mask])
        assert torch.equal(st["fc1.weight"][mask], new["model"]["fc1.weight"][mask])


def test_static_partition_fixed_dynamic_logged_and_random_redrawn(toy_data):
    static = _run("fedfac", toy_data, {"layers": (1,), "mode": "static", "max_iter": 5}, rounds=3)
    assert all(r["internals"]["stable/fc1"] == 1.0 for r in static["rounds"])
    dyn = _run("fedfac", toy_data, {"layers": (1,), "q": 0.25, "max_iter": 5}, rounds=3)
    fr = [r["internals"]["shared_frac/fc1"] for r in dyn["rounds"]]
    assert all(abs(f - 0.75) < 0.01 for f in fr) and all("G/fc1" in r["internals"] for r in dyn["rounds"])
    red = _run("fedfac", toy_data, {"layers": (1,), "partition": "random_redrawn"}, rounds=3)
    assert all(r["internals"]["stable/fc1"] < 0.9 for r in red["rounds"])


def test_mask_ablation_keeps_random_rows_and_localtrain_only_moves_personal_rows(toy_data):
    ctx = _ctx(toy_data)
    algo = make_algorithm("fedfac", {"layers": (1,), "partition": "given", "given": tuple(range(0, 200, 2)), "mask": "personal"})
    server, clients = algo.init(ctx, ctx.model.state_dict())
    m = server["masks"]["fc1"]
    up = algo.local_train(ctx, 0, server, clients[0])
    w = up.client["store"]["fc1.weight"]
    assert torch.equal(w[~m], server["random"]["fc1.weight"][~m])  # ablated personal rows: random, untrained
    assert not torch.equal(w[m], server["model"]["fc1.weight"][m])  # shared rows trained
    algo = make_algorithm("fedfac", {"layers": (1,), "partition": "given", "given": tuple(range(0, 200, 2))})
    server, _ = algo.init(ctx, ctx.model.state_dict())
    model = algo.unseen_module(ctx, server, toy_data.clients[1], finetune=True)
    st = {k: v.detach() for k, v in model.state_dict().items()}
    assert torch.equal(st["fc1.weight"][m], server["model"]["fc1.weight"][m])
    assert not torch.equal(st["fc1.weight"][~m], server["model"]["fc1.weight"][~m])
    assert torch.equal(st["fc2.weight"], server["model"]["fc2.weight"]) and torch.equal(
        st["head.weight"], server["model"]["head.weight"]
    )


def test_ensemble_unseen_and_bad_params():
    data = make_toy_data(unseen=1)
    rec = _run("fedfac", data, {"layers": (1,), "ensemble_unseen": True, "max_iter": 5})
    acc = rec["evals"][-1]["extra"]["ensemble_unseen"]
    assert len(acc) == 1 and 0.0 <= acc[0] <= 1.0
    for bad in ({"layers": ()}, {"mode": "x"}, {"partition": "given", "layers": (1, 2)}, {"kappa": 0.0}, {"mask": "all"}):
        with pytest.raises(ValueError):
            make_algorithm("fedfac", bad)
    with pytest.raises(ValueError, match="head"):
        _run("fedfac", data, {"layers": (3,)})


def test_ensemble_is_the_mean_softmax_of_the_clients_models_computed_by_hand(monkeypatch):
    """Held-out clients' Ensemble (Table 3): the mean over every client's personalized model of its softmax, argmax,
    accuracy per held-out client. Each client's model is made to output fixed logits (head weights 0, bias the
    logits): client 0 is sure of class 0 (logit 20), the other four lean to class 1 (logit 2). The mean softmax picks
    class 1, the mean of the logits would pick class 0: the expected accuracies are computed here from the labels."""
    data = make_toy_data(num_clients=5, unseen=2)
    ctx = _ctx(data)
    algorithm = make_algorithm("fedfac", {"layers": (1,), "ensemble_unseen": True})
    k, n = data.num_classes, ctx.num_clients
    logits = torch.zeros(n, k)
    logits[0, 0], logits[1:, 1] = 20.0, 2.0
    base = ctx.state_of(ctx.model)
    states = [{**base, "head.weight": torch.zeros_like(base["head.weight"]), "head.bias": logits[c]} for c in range(n)]
    monkeypatch.setattr(algorithm, "client_state", lambda ctx, server, client: states[client["i"]])
    got = algorithm.ensemble_accuracy(ctx, {}, [{"i": c} for c in range(n)])
    mean_softmax = torch.exp(logits - logits.logsumexp(1, keepdim=True)).mean(0)
    assert int(mean_softmax.argmax()) == 1 and int(logits.mean(0).argmax()) == 0  # the two rules disagree here
    expected = [float((d.test.y == 1).float().mean()) for d in data.unseen]
    assert got == pytest.approx(expected, abs=0) and len(got) == 2 and 0 < sum(expected) < 2


# ---- convergence of the factor analysis (issue 13 item 8) -----------------------------------------------


def test_threshold_rules_quantile_mean_and_given():
    nu = np.array([0.1, 0.2, 0.3, 0.9])  # mean 0.375, median 0.25
    assert FA.threshold_split(nu, "mean").tolist() == [False, False, False, True]
    assert FA.threshold_split(nu, "quantile", q=0.5).tolist() == [False, False, True, True]
    assert not FA.threshold_split(nu, "given").any()  # τ = +∞ (official --given_threshold without a value)
    assert FA.threshold_split(nu, "given", tau=0.25).tolist() == [False, False, True, True]
    with pytest.raises(ValueError, match="threshold"):
        FA.threshold_split(nu, "median")


def test_uls_gradient_matches_finite_differences():
    _, z = _oracle(0.5, n_clients=5)
    r, _ = FA.correlation_matrix(z[:, :30])
    psi = np.random.default_rng(0).uniform(0.2, 0.8, 30)
    f, g = FA.uls_objective(psi, r, 8)
    h = 1e-6
    for j in (0, 7, 29):
        e = np.zeros(30)
        e[j] = h
        fd = (FA.uls_objective(psi + e, r, 8)[0] - FA.uls_objective(psi - e, r, 8)[0]) / (2 * h)
        assert g[j] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    a = FA._top_loadings(r - np.diag(psi), 8)  # f = ½‖R − diag(ψ) − AAᵀ‖² with the top-8 loadings
    assert f == pytest.approx(0.5 * ((r - np.diag(psi) - a @ a.T) ** 2).sum(), rel=1e-10)


def test_minres_converges_to_the_paf_fixed_point_where_paf50_stops_early():
    _, z = _oracle(0.5, n_clients=20)
    with pytest.warns(FA.FactorConvergenceWarning, match="did not converge"):
        short = FA.factor_analysis(z, 0.85, max_iter=50, tol=1e-4, method="paf")
    assert not short.converged and short.iterations == 50 and short.last_change >= 1e-4 and short.gradient > 1e-4
    fit = FA.factor_analysis(z, 0.85, max_iter=500, tol=1e-5, method="minres")
    assert fit.converged and fit.gradient <= 1e-5
    long = FA.factor_analysis(z, 0.85, max_iter=3000, tol=1e-8, method="paf")
    assert long.converged
    assert np.abs(fit.communalities - long.communalities).max() < 1e-4  # the same fixed point
    assert np.abs(short.communalities - long.communalities).max() > 1e-2  # PAF-50 was far from it
    r, _ = FA.correlation_matrix(z)  # fixed point: ψ = diag(R − AAᵀ) reproduces the loadings
    a = FA._top_loadings(r - np.diag(np.clip(1 - fit.communalities, 0, 1)), fit.n_factors)
    assert np.abs(FA.communalities(a) - fit.communalities).max() < 1e-4
