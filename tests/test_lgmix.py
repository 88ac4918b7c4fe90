"""LG-Mix (Algorithm 1): limits λ ≡ 0 (FedAvg) and λ ≡ 1 (local training), λ ∈ (0, 1), Eq. (5)/(6) statistics,
history averaging and the switches for the paper-vs-code differences."""

import numpy as np
import pytest
import torch
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.lgmix import feature_trace, mixing_ratio
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.models import build_model

OPT = OptimConfig(lr=0.05, batch_size=8)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models: one intra-op thread is much faster than two on a loaded 2-core machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _run(method, data, params=None, model="small-bn-cnn", rounds=3):
    settings = RunSettings(rounds=rounds, optim=OPT, progress=False)
    fn = lambda: build_model(model, data.input_shape, data.num_classes)  # noqa: E731
    return run_simulation(make_algorithm(method, params), data, fn, settings)


def _close(a, b, tol=1e-5):
    return all(torch.allclose(a[k].double(), b[k].double(), atol=tol, rtol=0) for k in a if a[k].is_floating_point())


@pytest.fixture(scope="module")
def data():
    return make_toy_data(num_clients=3, n=24)


def test_lambda_zero_is_fedavg(data):
    """λ ≡ 0: every w_c(t) equals u(t), and u(t) equals FedAvg's global model (all w_c start at u(0))."""
    mix = _run("lgmix", data, {"lambda_mode": "fixed", "lam": 0.0})
    avg = _run("fedavg", data)
    u = mix["final"]["server"]["model"]
    assert _close(u, avg["final"]["server"]["model"])
    for c in mix["final"]["clients"]:
        assert _close(c["model"], u)
    for e_mix, e_avg in zip(mix["evals"], avg["evals"]):
        assert np.allclose(e_mix["test_loss"], e_avg["test_loss"], atol=1e-5)


def test_lambda_one_is_local_training(data):
    """λ ≡ 1: each w_c follows its own local updates only, exactly like the Local baseline."""
    mix = _run("lgmix", data, {"lambda_mode": "fixed", "lam": 1.0})
    loc = _run("local", data)
    for c_mix, c_loc in zip(mix["final"]["clients"], loc["final"]["clients"]):
        assert _close(c_mix["model"], c_loc["personal"])
    # the global model still moves (it is the average of the local updates) but nobody uses it
    assert not _close(mix["final"]["server"]["model"], mix["final"]["clients"][0]["model"], tol=1e-8)


@pytest.mark.parametrize("params", [{}, {"trace_mode": "code"}, {"global_bn": "train"}, {"history": False}])
def test_adaptive_lambda_in_open_unit_interval_and_history_is_running_mean(data, params):
    rec = _run("lgmix", data, params, rounds=4)
    raw = np.array([r["internals"]["lambda_raw"] for r in rec["rounds"]])
    used = np.array([r["internals"]["lambda"] for r in rec["rounds"]])
    assert raw.shape == (4, 3) and np.all((raw > 0) & (raw < 1))
    expected = np.cumsum(raw, 0) / np.arange(1, 5)[:, None] if params.get("history", True) else raw
    assert np.allclose(used, expected, atol=1e-12)
    # the logged per-client traces reproduce λ_raw by Eq. (6)
    for r in rec["rounds"]:
        for m in r["client_metrics"].values():
            assert m["lambda_raw"] == pytest.approx(m["trace_local"] / (m["trace_local"] + m["trace_global"]), abs=1e-12)


def test_mixing_step_is_eq2_for_adaptive_lambda(data):
    """One round by hand: w_c(1) = w_c(0) + λ Δw_c + (1 − λ) Δu with Δu the n_c-weighted mean of the Δw_c."""
    one = _run("lgmix", data, rounds=1)
    local = _run("local", data, rounds=1)  # same minibatch order (generator key "train"), so Δw_c is identical
    w0 = local["final"]["server"]["model"]  # Local never changes the server model: u(0)
    deltas = [S.sub(c["personal"], w0) for c in local["final"]["clients"]]
    du = S.weighted_average(deltas, [len(c.train) for c in data.clients])
    assert _close(one["final"]["server"]["model"], S.add(w0, du))
    for cid, c in enumerate(one["final"]["clients"]):
        lam = one["rounds"][0]["internals"]["lambda"][cid]
        assert 0 < lam < 1 and abs(lam - 0.5) > 1e-3  # a λ that tells λ from 1 − λ
        expected = {k: w0[k] + lam * deltas[cid][k] + (1 - lam) * du[k] for k in w0 if w0[k].is_floating_point()}
        assert _close(c["model"], expected)


def _full_batch_sgd_step(model, x, y, lr):
    """One plain SGD step of the mean cross-entropy over the whole set (written out, not pflnb's loop)."""
    loss = torch.nn.functional.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    with torch.no_grad():
        for p, g in zip(model.parameters(), grads):
            p -= lr * g
    return model


def _sq(model, x):
    with torch.no_grad():
        return float((model.features(x).double() ** 2).sum())


@pytest.mark.parametrize("feature_epochs", ["all", "last"])
def test_eq6_ratio_by_hand_with_two_local_epochs(data, feature_epochs):
    """Eq. (6) from first principles on the BN-free MLP with one full batch per epoch and two epochs: round 1 starts
    at w_c = u(0), so epoch 1 sees h(u(0)) locally and globally, epoch 2 sees h(w') after one SGD step locally and
    h(u(0)) globally. ``all``: λ = (A + B) / (A + B + 2A); ``last`` (the authors' code): λ = B / (B + A)."""
    opt = OptimConfig(lr=0.05, batch_size=1000, local_epochs=2)
    fn = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
    settings = RunSettings(rounds=1, optim=opt, progress=False)
    rec = run_simulation(make_algorithm("lgmix", {"feature_epochs": feature_epochs}), data, fn, settings)
    u0 = run_simulation(make_algorithm("local"), data, fn, settings)["final"]["server"]["model"]
    for cid, c in enumerate(data.clients):
        model = fn()
        model.load_state_dict(u0)
        a = _sq(model, c.train.x)
        b = _sq(_full_batch_sgd_step(model, c.train.x, c.train.y, opt.lr), c.train.x)
        expected = (a + b) / (3 * a + b) if feature_epochs == "all" else b / (a + b)
        assert rec["rounds"][0]["internals"]["lambda_raw"][cid] == pytest.approx(expected, rel=1e-9)


def test_eq6_local_and_global_roles_by_hand(data):
    """Round 2's raw λ_c is tr(Σ) of the client's model w_c(1) over tr(Σ) of it plus the global model u(1)'s, on the
    client's training set (one full batch, BN-free MLP): swapping local and global gives 1 − λ and fails."""
    opt = OptimConfig(lr=0.2, batch_size=1000)
    fn = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
    run = lambda r: run_simulation(  # noqa: E731
        make_algorithm("lgmix", {"history": False}), data, fn, RunSettings(rounds=r, optim=opt, progress=False)
    )
    one, two = run(1), run(2)
    u1 = fn()
    u1.load_state_dict(one["final"]["server"]["model"])
    for cid, c in enumerate(data.clients):
        w1 = fn()
        w1.load_state_dict(one["final"]["clients"][cid]["model"])
        loc, glob = _sq(w1, c.train.x), _sq(u1, c.train.x)
        assert abs(loc - glob) / glob > 1e-5  # the two traces differ (far above the 1e-9 tolerance), so a swap is visible
        assert two["rounds"][1]["internals"]["lambda_raw"][cid] == pytest.approx(loc / (loc + glob), rel=1e-9)


def test_unmixed_buffers_keep_local_statistics(data):
    """mix_buffers=False with λ = 0: parameters follow u exactly, BN running statistics stay the client's own."""
    rec = _run("lgmix", data, {"lambda_mode": "fixed", "lam": 0.0, "mix_buffers": False}, rounds=2)
    u = rec["final"]["server"]["model"]
    model = build_model("small-bn-cnn", data.input_shape, data.num_classes)
    params = {n for n, _ in model.named_parameters()}
    stats = [k for k in u if k.endswith(("running_mean", "running_var"))]
    for c in rec["final"]["clients"]:
        assert all(torch.allclose(c["model"][k], u[k], atol=1e-5) for k in params)
        assert all(not torch.allclose(c["model"][k], u[k], atol=1e-5) for k in stats)


def test_feature_trace_paper_equals_full_kernel_trace():
    """Eq. (5): tr(FᵀF) = Σ_i ‖h_i‖² = m·tr(Ĥ) with Ĥ = F Fᵀ / m formed explicitly (n × n)."""
    gen = torch.Generator().manual_seed(0)
    f = torch.relu(torch.randn(50, 16, generator=gen, dtype=torch.float64))
    h_hat = f @ f.T / f.shape[1]
    assert feature_trace(f, "paper") == pytest.approx(f.shape[1] * float(torch.trace(h_hat)), rel=1e-12)
    assert feature_trace(f, "paper") == pytest.approx(float(torch.trace(f.T @ f)), rel=1e-12)


def test_feature_trace_code_is_total_variance_minus_smallest_eigenvalue():
    gen = torch.Generator().manual_seed(1)
    f = torch.randn(40, 8, generator=gen, dtype=torch.float64) * torch.arange(1, 9, dtype=torch.float64)
    fc = (f - f.mean(0)).numpy()
    eig = np.linalg.eigvalsh(fc.T @ fc / 40)
    assert feature_trace(f, "code") == pytest.approx(eig.sum() - eig.min(), rel=1e-10)
    # shift invariance (centred) — unlike the paper's uncentred trace
    assert feature_trace(f + 3.0, "code") == pytest.approx(feature_trace(f, "code"), rel=1e-10)
    assert feature_trace(f + 3.0, "paper") > feature_trace(f, "paper")


def test_mixing_ratio_limits():
    assert mixing_ratio(1.0, 1.0) == 0.5
    assert mixing_ratio(3.0, 1.0) == 0.75
    assert mixing_ratio(0.0, 0.0) == 0.5
    assert 0 < mixing_ratio(1e-9, 5.0) < 1e-8


def test_bad_parameters_are_rejected():
    for bad in ({"trace_mode": "eig"}, {"global_bn": "none"}, {"lambda_mode": "auto"}, {"lam": 1.5}, {"ntk_every": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            make_algorithm("lgmix", bad)


def test_ntk_diagnostic_on_mlp(data):
    """At round 1 w_c = u, so λ from features and from the full NTK trace are both exactly 0.5."""
    rec = _run("lgmix", data, {"ntk_every": 2}, model="mlp", rounds=3)
    r1, r3 = rec["rounds"][0]["internals"], rec["rounds"][2]["internals"]
    assert np.allclose(r1["lambda_ntk"], 0.5) and np.allclose(r1["lambda_feat"], 0.5)
    assert "lambda_ntk" not in rec["rounds"][1]["internals"]
    assert all(0 < v < 1 for v in r3["lambda_ntk"])
