"""FedPG: exact min-norm solver, fair objective, γ_i closed form, the algorithm's guarantees, P-model metrics, the
declared experiments."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_toy_data
from scipy.optimize import linprog, minimize, nnls

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.fedpg import loss_and_gradient
from pflnb.data.federated import Split
from pflnb.experiments import profile_config
from pflnb.experiments.paper import ExperimentResult
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.fl.engine import derive_seed
from pflnb.models import build_model
from pflnb.papers.fedpg.claims import M1_PAIRED
from pflnb.papers.fedpg.experiments import (
    FRESH_LABELS,
    PModelJob,
    in_setting,
    mixing_sample,
    pm_scores,
    round_half_up,
    scenarios_table,
)
from pflnb.papers.fedpg.paper import ETA, PAPER, TABLE1
from pflnb.theory.mgda import (
    drift_gammas,
    fair_gradient,
    fair_objective,
    fair_weights,
    fedpg_direction,
    min_norm_direction,
    min_norm_weights,
    wolfe_min_norm,
)


def _qp_scipy(G, lower=0.0, upper=1.0):
    K = G.shape[0]
    res = minimize(
        lambda x: x @ G @ x,
        np.full(K, 1.0 / K),
        jac=lambda x: 2 * G @ x,
        bounds=[(lower, upper)] * K,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones(K)}],
        method="SLSQP",
        options={"ftol": 1e-16, "maxiter": 2000},
    )
    return res.x


def _qp_nnls(V, rho=1e4):
    """min ‖Vᵀλ‖² + ρ²(Σλ − 1)² over λ ≥ 0 (the penalty form of the simplex QP) by scipy's NNLS."""
    A = np.vstack([V.T, rho * np.ones((1, V.shape[0]))])
    return nnls(A, np.r_[np.zeros(V.shape[1]), rho])[0]


@pytest.mark.parametrize("K,n", [(2, 2), (3, 3), (10, 100), (30, 100), (70, 500)])
def test_wolfe_matches_generic_qp_and_kkt(K, n):
    rng = np.random.default_rng(K * 1000 + n)
    for _ in range(5):
        V = rng.uniform(-0.5, 0.5, (K, n))
        G = V @ V.T
        lam = wolfe_min_norm(G)
        assert lam.min() >= 0 and abs(lam.sum() - 1) < 1e-12
        ref = _qp_scipy(G) if K <= 10 else _qp_nnls(V)
        ref = ref / ref.sum()
        f_w, f_s = lam @ G @ lam, ref @ G @ ref
        assert f_w <= f_s + 1e-10  # never worse than the generic solver
        assert f_s - f_w <= 1e-6 * max(f_s, 1e-12) + 1e-12
        x = lam @ V
        dots = V @ x  # KKT: p_k·x ≥ ‖x‖², with equality on the support
        assert dots.min() >= (1 - 1e-6) * (x @ x) - 1e-14
        assert np.allclose(dots[lam > 1e-9], x @ x, rtol=1e-8, atol=1e-12)


def test_wolfe_two_point_closed_form():
    rng = np.random.default_rng(1)
    for _ in range(20):
        q1, q2 = rng.normal(size=(2, 4))
        lam1 = np.clip((q2 - q1) @ q2 / ((q1 - q2) @ (q1 - q2)), 0, 1)
        lam = wolfe_min_norm(np.array([[q1 @ q1, q1 @ q2], [q1 @ q2, q2 @ q2]]))
        assert abs(lam[0] - lam1) < 1e-10


def test_pareto_stationary_hull_gives_zero_direction():
    rng = np.random.default_rng(2)
    V = rng.normal(size=(60, 5))  # more points than dimensions: 0 is in the hull
    feas = linprog(np.zeros(60), A_eq=np.vstack([V.T, np.ones(60)]), b_eq=np.r_[np.zeros(5), 1.0], bounds=(0, None))
    assert feas.status == 0
    d, lam = min_norm_direction(V)
    assert np.linalg.norm(d) < 1e-8 * np.linalg.norm(V, axis=1).mean()


def test_capped_simplex_weights_match_generic_qp():
    rng = np.random.default_rng(3)
    V = rng.normal(size=(8, 20))
    G = V @ V.T
    lam = min_norm_weights(G, 1 / 8 - 0.05, 1 / 8 + 0.05)
    ref = _qp_scipy(G, 1 / 8 - 0.05, 1 / 8 + 0.05)
    assert abs(lam @ G @ lam - ref @ G @ ref) < 1e-7 * (ref @ G @ ref)
    assert lam.min() >= 1 / 8 - 0.05 - 1e-9 and lam.max() <= 1 / 8 + 0.05 + 1e-9


def test_fair_gradient_is_the_chain_rule_of_minus_cosine():
    rng = np.random.default_rng(4)
    A, b = rng.normal(size=(5, 7)), rng.uniform(1, 3, 5)  # linear losses L_i(ω) = b_i + A_i·ω
    w = 0.1 * rng.normal(size=7)
    L = b + A @ w
    num = np.array([(fair_objective(b + A @ (w + e)) - fair_objective(b + A @ (w - e))) / 2e-6 for e in 1e-6 * np.eye(7)])
    assert np.allclose(fair_gradient(A, L), num, atol=1e-7)
    h = fair_weights(L)
    assert abs(h @ L) < 1e-12  # h ⟂ L
    assert np.array_equal(h > 0, L > (L @ L) / L.sum())  # −∇F lowers the above-threshold losses
    assert np.allclose(fair_weights(np.full(4, 2.0)), 0.0)  # equal losses: ∇F = 0


def test_fig1_toy_matches_the_authors_demo_numbers():
    G = np.array([[1, -0.3, 0], [-1, 1, -0.2], [-1, -1, 1.0]])
    L = np.array([1.0, 2, 3])
    D = fedpg_direction(G @ G.T, 3, L)
    d = D.coef @ G
    assert np.allclose(D.lam, [0.4512, 0.3183, 0.0, 0.2306], atol=1e-4)
    assert abs(D.mu - 1.4015) < 1e-4 and abs(D.sigma - 3.83) < 5e-3
    assert np.allclose(d, [-0.0475, -0.1130, -0.2344], atol=1e-4)
    assert np.all(G @ d < 0) and fair_gradient(G, L) @ d < 0
    assert (G @ -G.mean(0))[0] > 0  # FedAvg's direction conflicts with client 1
    ghat = G * D.scales[:, None]
    gam = drift_gammas(ghat @ ghat.T, ghat @ d)
    assert np.allclose(gam, [0.0105, 0.0105, 0.0234], atol=1e-4)


@pytest.mark.parametrize("shared", [0.0, 0.5])
def test_direction_is_common_descent_and_gammas_are_maximal(shared):
    rng = np.random.default_rng(5 + int(10 * shared))
    for _ in range(20):
        k, s, n = 10, 15, 200
        V = rng.normal(size=(k + s, n)) + shared * rng.normal(size=n)
        V *= rng.uniform(0.1, 10, size=(k + s, 1))  # arbitrary scales: normalisation must not care
        L = rng.uniform(0.5, 3, k)
        D = fedpg_direction(V @ V.T, k, L)
        d = D.coef @ V
        assert np.all(V @ d < 0)  # online and stale columns
        assert fair_gradient(V[:k], L) @ d < 0
        assert D.sigma >= 1 - 1e-12
        ghat = V[:k] * D.scales[:k, None]
        assert abs(np.linalg.norm(d) - np.linalg.norm(ghat.mean(0))) < 1e-9 * D.mu  # ‖d‖ = ‖d_r‖
        gam = drift_gammas(ghat @ ghat.T, ghat @ d)
        assert np.all((gam >= 0) & (gam <= 1))
        mu2 = D.mu**2
        for i in range(k):
            di = d + gam[i] * (-ghat[i] - d)
            others = np.delete(ghat @ di, i)
            assert others.max() <= 1e-10 * mu2  # feasible
            assert gam[i] == 1.0 or others.max() >= -1e-8 * mu2  # maximal: a constraint is active
            # bisection on [0, 1] agrees with the closed form
            lo, hi = 0.0, 1.0
            feasible = lambda g, i=i, d=d, ghat=ghat: np.delete(ghat @ (d + g * (-ghat[i] - d)), i).max() <= 0  # noqa: E731
            if feasible(1.0):
                lo = 1.0
            else:
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
            assert abs(lo - gam[i]) < 1e-9
            gi = [ghat[i] @ (d + g * (-ghat[i] - d)) for g in np.linspace(0, 1, 21)]
            assert np.all(np.diff(gi) <= 1e-12 * mu2)  # own first-order gain grows with γ


def test_counterexample_a13_and_equal_loss_guard():
    D = fedpg_direction(np.array([[1.0, 1.0], [1.0, 1.0]]), 2, np.array([1.0, 2.0]))
    assert D.d_norm == 0.0  # 0 ∈ conv{g, g, ∇F̂} although −g descends both clients
    D = fedpg_direction(np.array([[1.0, 0.2], [0.2, 1.0]]), 2, np.array([1.5, 1.5]))
    assert not D.fair_used and D.d_norm > 0
    D = fedpg_direction(np.array([[1.0, -0.5], [-0.5, 1.0]]), 2, np.array([1.0, 2.0]), direction="fedsgd")
    assert D.sigma == 1.0


# ------------------------------------------------------------------------------------------ algorithm


def _fedpg_run(params, rounds=1, participation=1.0, lr=0.5, num_clients=4):
    data = make_toy_data(num_clients=num_clients, n=30)
    opt = OptimConfig(lr=lr, batch_size=8)
    settings = RunSettings(rounds=rounds, participation=participation, optim=opt, progress=False, eval_every=rounds)
    fn = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
    return data, fn, run_simulation(make_algorithm("fedpg", params), data, fn, settings)


def test_one_round_descent_and_drift_constraints():
    data, fn, rec = _fedpg_run({}, lr=0.5)
    torch.manual_seed(derive_seed(0, "init"))
    w0 = fn()
    names = [n for n, _ in w0.named_parameters()]
    grads = torch.stack([loss_and_gradient(w0, c.train, 50)[1] for c in data.clients])
    server, clients = rec["final"]["server"], rec["final"]["clients"]
    flat0 = S.flatten(w0.state_dict(), names).double()
    d = (S.flatten(server["model"], names).double() - flat0) / 0.5
    assert torch.all(grads @ d < 0)  # every online client descends to first order
    gam = rec["rounds"][0]["internals"]["gamma"]
    assert any(g > 0 for g in gam)
    for i, c in enumerate(clients):
        di = (S.flatten(c["pmodel"], names).double() - flat0) / 0.5
        dots = torch.cat([grads[:i] @ di, grads[i + 1 :] @ di])
        tol = 1e-4 * grads.norm(dim=1).max() * di.norm()  # float32 states
        assert dots.max() <= tol
        assert grads[i] @ di <= grads[i] @ d + tol  # the drift helps the client itself


def test_gamma_zero_pmodel_is_the_gmodel_and_ablation_flags():
    _, _, rec = _fedpg_run({"personalize": False}, rounds=2)
    server, clients = rec["final"]["server"], rec["final"]["clients"]
    assert all(S.equal(c["pmodel"], server["model"]) for c in clients)
    _, _, rec = _fedpg_run({"stale": False}, rounds=4, participation=0.5, num_clients=6)
    assert all(e["internals"]["n_stale"] == 0 for e in rec["rounds"])
    _, _, rec = _fedpg_run({}, rounds=4, participation=0.5, num_clients=6)
    assert max(e["internals"]["n_stale"] for e in rec["rounds"]) > 0
    assert all(e["internals"]["max_online_dot"] < 0 for e in rec["rounds"])
    _, _, rec = _fedpg_run({"gamma": 1.0}, rounds=1)
    assert rec["rounds"][0]["internals"]["gamma"] == [1.0] * 4


def test_sfedpg_never_accepts_a_step_raising_an_online_loss():
    data = make_toy_data(num_clients=4, n=30)
    fn = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
    for fallback in ("skip", "mdfg"):
        settings = RunSettings(rounds=6, optim=OptimConfig(lr=2.0, batch_size=8), progress=False, eval_every=6)
        rec = run_simulation(make_algorithm("s-fedpg", {"fallback": fallback, "s": 2}), data, fn, settings)
        for e in rec["rounds"]:
            i = e["internals"]
            if i["armijo_ok"] or fallback == "skip":
                assert i["max_loss_change"] <= 0.0 and i["loss_rose_frac"] == 0.0


def test_params_are_validated():
    with pytest.raises(ValueError, match="gamma"):
        make_algorithm("fedpg", {"gamma": 1.5})
    with pytest.raises(ValueError, match="direction"):
        make_algorithm("fedpg", {"direction": "avg"})


# -------------------------------------------------------------------------------------------- metrics


def test_mixing_sample_limits():
    sizes = [5, 7, 3, 9, 6]
    offsets = np.r_[0, np.cumsum(sizes)]
    for i in range(5):
        assert np.array_equal(mixing_sample(sizes, i, 0.0, 0), np.arange(offsets[i], offsets[i + 1]))
        g = mixing_sample(sizes, i, 1.0, 0)
        assert g.size == sizes[i] and np.unique(g).size == g.size and g.max() < offsets[-1]
        assert np.array_equal(g, mixing_sample(sizes, i, 1.0, 0))  # fixed once per (seed, client, c)
    assert round_half_up(0.5 * 99) == 50 and round_half_up(2.5) == 3


class _Const(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.nn.functional.one_hot(torch.full((x.shape[0],), self.k), 3).float()


def test_pm_scores_against_direct_counts():
    y = [torch.tensor([0, 0, 1, 2]), torch.tensor([1, 1, 1]), torch.tensor([2, 0, 2, 2, 2])]
    tests = [Split(torch.zeros(len(t), 1), t) for t in y]
    out = pm_scores(lambda i: _Const(i), _Const(0), tests, cs=(0.0, 1.0), seed=0)
    assert out["pm"]["0.0"] == [0.5, 1.0, 0.8]  # L-acc: own class on own test set
    Y = torch.cat(y).numpy()
    for i in range(3):
        smp = mixing_sample([4, 3, 5], i, 1.0, 0)
        assert out["pm"]["1.0"][i] == pytest.approx(np.mean(Y[smp] == i))
        assert out["gm"]["1.0"][i] == pytest.approx(np.mean(Y[smp] == 0))


def _table1():
    """The Table 1 experiment without the data check (no dataset is loaded)."""
    return dataclasses.replace(PAPER.experiment("table1"), fallback=False)


def test_profiles():
    exp = _table1()
    cfg = exp.base("paper", "cifar10")
    got = (cfg.dataset, cfg.model, cfg.num_clients, cfg.participation, cfg.alpha, cfg.rounds, cfg.local_epochs, cfg.batch_size)
    assert got == ("cifar10", "cifar-cnn", 100, 0.1, 0.1, 2000, 5, 50)
    assert cfg.lr_decay == 0.999
    cfg.validate()
    # two config layers: the profile table's Fashion-MNIST row, then the experiment's fields
    assert exp.base("cpu", device="cpu") == profile_config("cpu", "fmnist", **TABLE1["cpu"], device="cpu")
    with pytest.raises(ValueError, match="profile"):
        exp.base("gpu")
    with pytest.raises(ValueError, match="no fields for 'cifar10'"):
        exp.base("cpu", "cifar10")


def test_table1_arms_learning_rates_and_jobs():
    exp = _table1()
    cpu = {lab["label"]: cfg for lab, cfg in exp.runs("cpu", seeds=[0])}
    paper = {lab["label"]: cfg for lab, cfg in exp.runs("paper", seeds=[0])}
    assert "FedProx" in cpu and not {"APFL", "pFedMe"} & set(cpu)  # the optional baselines only at the paper profile
    assert list(paper) == [*cpu, "APFL", "pFedMe"] and paper["pFedMe"].method_params == {"inner_steps": 5}
    assert cpu["FedPG"].lr == cpu["S-FedPG"].lr == ETA != cpu["Ditto"].lr == exp.base("cpu").lr
    jobs = {lab["label"]: exp.make_job(cfg, exp.arm(lab["label"])) for lab, cfg in exp.runs("cpu", seeds=[0])}
    assert all(isinstance(j, PModelJob) for j in jobs.values())
    assert {k for k, j in jobs.items() if j.fresh} == set(FRESH_LABELS)  # protocol P2 scores for the FedPG methods
    ablations = {lab["label"]: cfg for lab, cfg in PAPER.experiment("ablations").runs("cpu", seeds=[0])}
    assert {c.method for c in ablations.values()} == {"fedpg"} and {c.lr for c in ablations.values()} == {ETA}
    # the ablations run in the Table 1 setting: only the method's parameters differ from FedPG's run
    assert all(c.replace(method_params={}) == cpu["FedPG"] for c in ablations.values())


def test_cnn_analogues_and_scenarios_mirror_the_fmnist_experiments():
    """The CNN analogues run Table 1's, Table 2's and Fig. 5's settings with the small CNN on digits5-lite below the
    paper profile and the paper's CIFAR-10 runs at it; App. B.1's scenarios change one field of Table 1 each."""
    t1, abl, f5 = (PAPER.experiment(n) for n in ("table1_cnn", "ablations_cnn", "fig5_cnn"))
    fmnist = _table1().base("cpu")
    cnn = t1.base("cpu")
    assert (cnn.dataset, cnn.model, cnn.partition, cnn.num_clients, cnn.max_samples) == (
        "digits5-lite",
        "small-cnn",
        "dirichlet",
        20,
        None,
    )
    same = ("alpha", "participation", "batch_size", "local_epochs", "lr_decay", "fractions")
    assert all(getattr(cnn, f) == getattr(fmnist, f) for f in same)
    assert t1.base("paper") == _table1().base("paper", "cifar10")  # at the paper profile: the paper's CIFAR-10 run
    assert [a.label for a in t1.arms] == [a.label for a in _table1().arms] and t1.tune == _table1().tune
    pat2 = abl.base("cpu")
    assert (pat2.partition, pat2.classes_per_client) == ("pathological", 2) and pat2.replace(partition="dirichlet") == cnn
    assert abl.base("paper").partition == "pathological" and abl.base("paper").dataset == "cifar10"
    assert {lab["label"] for lab, _ in abl.runs("cpu", seeds=[0])} == {
        "FedPG",
        "M1 (d = d_r)",
        "M2 (no F)",
        "M4 (no stale)",
        M1_PAIRED,
    }
    fig5 = f5.base("cpu")
    fig5_fmnist = PAPER.experiment("fig5").base("cpu")
    assert (fig5.model, fig5.participation, fig5.partition, fig5.num_clients) == ("small-cnn", 1.0, "pathological", 10)
    assert fig5.rounds == fig5_fmnist.rounds and f5.protocol == PAPER.experiment("fig5").protocol
    assert "FedPG (5η)" not in {a.label for a in f5.arms} and len(f5.arms) == 6
    scen = PAPER.experiment("table1_scenarios")
    runs = scen.runs("cpu", seeds=[0])
    for lab, cfg in runs:
        differs = {f for f in ("partition", "participation") if getattr(cfg, f) != getattr(fmnist, f)}
        want = {"Pat-2": {"partition"}, "50 % online": {"participation"}, "100 % online": {"participation"}}
        assert differs == want[lab["setting"]]
    assert [(lab["setting"], lab["label"]) for lab, _ in runs] == [
        ("Pat-2", "FedAvg-FT"),
        ("Pat-2", "FedPG"),
        ("50 % online", "FedPG"),
        ("100 % online", "FedPG"),
    ]


def test_in_setting_and_scenarios_table():
    scen = PAPER.experiment("table1_scenarios")
    pm = {
        "cs": [0.0, 0.5, 1.0],
        "pm": {c: [0.8, 0.6] for c in ("0.0", "0.5", "1.0")},
        "gm": {c: [0.7, 0.7] for c in ("0.0", "0.5", "1.0")},
    }
    labels = [lab for lab, _ in scen.runs("cpu", seeds=[0, 1])]
    recs = [
        {"label": lab["label"], "config": {"seed": lab["seed"]}, "pm": pm, "pm_fresh": {"variants": {"auto": pm}}}
        for lab in labels
    ]
    table = pd.DataFrame(labels)
    tuning = pd.DataFrame({"setting": ["Pat-2", "50 % online"], "label": ["FedPG", "FedPG"]})
    res = ExperimentResult(scen, "cpu", table, recs, tuning)
    half = in_setting(res, "50 % online")
    assert (
        list(half.table["label"]) == ["FedPG", "FedPG"]
        and len(half.records) == 2
        and list(half.tuning["setting"]) == ["50 % online"]
    )
    with pytest.raises(KeyError, match="no runs in setting"):
        in_setting(res, "Pat-3")
    rows, summary = scenarios_table(res)
    assert list(summary["setting"]) == ["Pat-2"] * 3 + ["50 % online"] * 2 + ["100 % online"] * 2
    assert list(summary["method"])[:3] == ["FedAvg-FT", "FedPG", "FedPG (P2)"]
    assert set(rows["method"]) >= {"Pat-2: FedAvg-FT", "50 % online: FedPG (P2)"} and len(rows) == 14


# ------------------------------------------------------------------------------------------ convex toy


def test_fig1_baseline_directions_match_the_spec_numbers():
    from pflnb.papers.fedpg.fedpg_convex import baseline_directions

    G = np.array([[1, -0.3, 0], [-1, 1, -0.2], [-1, -1, 1.0]])
    dirs = baseline_directions(G, np.array([1.0, 2, 3]))
    assert np.allclose(G @ dirs["FedAvg"], [0.303, -0.18, -0.70], atol=1e-3)
    assert np.allclose(G @ dirs["FedMGDA+"], [0.0057, 0.0078, -0.0833], atol=1e-4)
    assert np.allclose(G @ dirs["MGDA"], -0.0084, atol=1e-4)


def test_common_descent_probability_fedpg_always_descends():
    from pflnb.papers.fedpg.fedpg_convex import common_descent_probability

    p = common_descent_probability(10, 10, trials=20)
    assert p["FedPG"] + p["FedPG_zero"] == 1.0
    assert all(p["FedPG"] >= p[k] for k in ("FedAvg", "FedMGDA+"))


def test_convex_toy_descent_lemma_and_fairness():
    from pflnb.papers.fedpg.fedpg_convex import digits_toy, fairness_summary, run_convex

    toy = digits_toy(num_clients=5, alpha=0.5)
    r = run_convex(toy, "fedpg", rounds=40)
    assert np.all(np.diff(r["losses"], axis=0) <= 1e-12)  # no client's loss ever rises under bound (10)
    assert r["d_min"][-1] < r["d_min"][0]
    m2 = run_convex(toy, "mgda", rounds=40)
    assert fairness_summary(r["losses"][-1])["spread"] < fairness_summary(m2["losses"][-1])["spread"]
