"""LG-Mix theory checks T1–T8 (spec §3): Proposition 1, the Gram matrix as empirical NTK, Eq. (5), H^∞,
Cauchy interlacing of client blocks and Theorem 1's one-round bound on a simulated federation."""

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from pflnb.models import MLP
from pflnb.theory import ntk as T


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Small matrices: one BLAS / intra-op thread is much faster than two on a loaded 2-core machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(old)


def test_t1_prop1_linear_dynamics():
    rng = np.random.default_rng(0)
    n, eta = 100, 0.01
    a = rng.standard_normal((n, n))
    h = a @ a.T / n
    s = np.linalg.eigvalsh(h)
    xi = rng.standard_normal((20000, n))
    ratio = ((xi @ (np.eye(n) - eta * h)) ** 2).sum(1) / (xi**2).sum(1)
    exact = T.prop1_exact_rate(s, eta)
    assert abs(ratio.mean() - exact) < 1e-3
    # exact − linear = η² tr(H²)/n (identity)
    assert exact - T.prop1_linear_rate(s, eta) == pytest.approx(eta**2 * np.trace(h @ h) / n, abs=1e-12)


def test_t2_prop1_on_two_layer_relu():
    rng = np.random.default_rng(1)
    x = T.unit_rows(rng.standard_normal((50, 10)))
    for eta in (0.01, 0.05, 0.2):
        obs, lin, ex, tr = [], [], [], []
        for _ in range(30):
            r, s = T.one_step_ratio(x, rng.standard_normal(50), 2000, eta, rng)
            obs.append(r), lin.append(T.prop1_linear_rate(s, eta)), ex.append(T.prop1_exact_rate(s, eta)), tr.append(s.mean())
        assert abs(np.mean(tr) - 0.5) < 0.01  # tr(H(0))/n = ½ for unit-norm inputs
        assert abs(np.mean(obs) - np.mean(ex)) < 0.015
        if eta == 0.01:
            assert abs(np.mean(obs) - np.mean(lin)) < 0.003


def test_t3_larger_trace_converges_faster():
    rng = np.random.default_rng(2)
    x = T.unit_rows(rng.standard_normal((50, 10)))
    ratios = []
    for c in (0.5, 1.0, 1.5, 2.0):
        r = [
            T.one_step_ratio(c * x, y, 1000, 0.05, np.random.default_rng(k))[0]
            for k, y in enumerate(rng.standard_normal((10, 50)))
        ]
        ratios.append(np.mean(r))
        assert abs(np.mean(r) - (1 - 0.05 * c**2)) < 0.02  # 1 − 2η tr(H)/n with tr(H)/n = c²/2
    assert np.all(np.diff(ratios) < 0)


def test_t4_gram_is_empirical_ntk():
    rng = np.random.default_rng(3)
    x = T.unit_rows(rng.standard_normal((20, 6)))
    w, a = T.two_layer_init(6, 512, rng, antisymmetric=False)
    j = T.two_layer_jacobian(w, a, x)
    assert np.max(np.abs(j @ j.T - T.relu_gram(w, x))) < 1e-10
    # the same Jacobian by torch.func on an nn.Module in float64
    net = torch.nn.Sequential(torch.nn.Linear(6, 512, bias=False), torch.nn.ReLU(), torch.nn.Linear(512, 1, bias=False)).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(w))
        net[2].weight.copy_(torch.from_numpy(a / np.sqrt(512))[None])
    jt = T.jacobian(net, torch.from_numpy(x))[:, 0, : 512 * 6].numpy()  # block of the first-layer weights
    assert np.max(np.abs(jt - j)) < 1e-12
    # last layer: J_v J_vᵀ = Ĥ = (1/m) h hᵀ for f = (1/√m) Σ a_r h_r differentiated w.r.t. a
    h = np.maximum(x @ w.T, 0.0)
    jv = h / np.sqrt(512)
    assert np.max(np.abs(jv @ jv.T - T.feature_gram(w, x))) < 1e-10


def test_t5_trace_identity_and_infinite_width_limits():
    rng = np.random.default_rng(4)
    x = T.unit_rows(rng.standard_normal((60, 10)))
    w, _ = T.two_layer_init(10, 4096, rng, antisymmetric=False)
    h = np.maximum(x @ w.T, 0.0)
    assert np.trace(T.feature_gram(w, x)) == pytest.approx(T.feature_trace_np(h) / 4096, rel=1e-10)
    assert np.allclose(np.diag(T.h_inf(x)), 0.5) and np.allclose(np.diag(T.h_hat_inf(x)), 0.5)
    errs = []
    for m in (256, 1024, 4096, 16384):
        wm, _ = T.two_layer_init(10, m, np.random.default_rng(m), antisymmetric=False)
        errs.append(np.linalg.norm(T.relu_gram(wm, x) - T.h_inf(x)) / np.linalg.norm(T.h_inf(x)))
    scaled = np.array(errs) * np.sqrt([256, 1024, 4096, 16384])
    assert scaled.max() / scaled.min() < 2.0  # error ∝ m^{-1/2}
    slope = np.polyfit(np.log([256, 1024, 4096, 16384]), np.log(errs), 1)[0]
    assert -0.7 < slope < -0.3


def test_ntk_trace_without_jacobian_equals_full_jacobian():
    torch.manual_seed(0)
    net = MLP(12, 5, hidden=(16, 8)).double()
    x = torch.randn(7, 12, dtype=torch.float64)
    full = T.ntk_trace(net, x)
    theta = T.empirical_ntk(net, x)
    assert full == pytest.approx(float(torch.einsum("ikik->", theta)), rel=1e-12)
    assert T.dense_ntk_trace(net, x) == pytest.approx(full, rel=1e-10)
    # last-layer block: K·Σ_i (‖h_i‖² + 1)
    j = T.jacobian(net, x)
    head = j[:, :, -(8 * 5 + 5) :]
    h = net.features(x)
    assert float((head**2).sum()) == pytest.approx(5 * float((h * h).sum().detach() + 7), rel=1e-10)
    with pytest.raises(ValueError, match="nn.Linear"):
        T.dense_ntk_trace(torch.nn.Sequential(torch.nn.Conv1d(1, 2, 3), torch.nn.Flatten()), torch.randn(2, 1, 5))


def test_t6_alignment_is_a_normalized_inner_product():
    rng = np.random.default_rng(5)
    x = T.unit_rows(rng.standard_normal((60, 10)))
    w, _ = T.two_layer_init(10, 4096, rng, antisymmetric=False)
    k1, k2 = T.relu_gram(w, x), T.feature_gram(w, x)
    expected = float((k1 * k2).sum() / np.sqrt((k1 * k1).sum() * (k2 * k2).sum()))  # ⟨K1, K2⟩_F / (‖K1‖ ‖K2‖)
    assert T.kernel_alignment(k1, k2) == pytest.approx(expected, rel=1e-12)
    assert 0 < expected < 1 and T.kernel_alignment(k1, 3.0 * k1) == pytest.approx(1.0)


def test_t6b_feature_lambda_tracks_full_ntk_lambda_on_a_small_run():
    """T6b on a small case: LG-Mix on the BN-free MLP (digits5-lite 8×8, 400 samples, 12 rounds), λ from
    last-layer features against λ from full empirical-NTK traces of w_c(t) and u(t) every round: the spec's
    criterion (Spearman > 0.9, mean |Δλ| < 0.05) over rounds 2–12, and exactly ½ at round 1."""
    from pflnb.experiments import run
    from pflnb.papers.lgmix import checks as LC
    from pflnb.papers.lgmix import experiments as LX
    from pflnb.papers.lgmix.paper import PAPER

    cfg = PAPER.experiment("t6b").base("smoke", rounds=12)
    rec = run(cfg.replace(method="lgmix", method_params={"ntk_every": 1}), cache=False, progress=False)
    stats = LC.t6b_stats(LX.ntk_table([rec]))
    assert stats["pairs"] == 55 and stats["round1_max_dev_from_half"] == 0.0
    assert LC.t6b_passes(stats), stats


def test_t7_interlacing_of_client_blocks():
    rng = np.random.default_rng(6)
    xs = T.clustered_clients(4, 15, 10, 0.8, rng)
    h = T.h_inf(np.concatenate(xs))
    s = T.spectrum(h)
    for c in range(4):
        sc = T.spectrum(h[15 * c : 15 * (c + 1), 15 * c : 15 * (c + 1)])
        assert sc[-1] >= s[-1] - 1e-12 and sc[0] <= s[0] + 1e-12
    assert np.trace(T.block_diagonal(h, [15] * 4)) == pytest.approx(np.trace(h), rel=1e-14)


def test_t8_theorem1_bound_and_lemma4():
    rng = np.random.default_rng(7)
    n_c, n_clients, k, eta_l = 10, 4, 5, 0.05
    xs = T.clustered_clients(n_clients, n_c, 8, 0.8, rng)
    ys = [rng.standard_normal(n_c) for _ in range(n_clients)]
    h = T.h_inf(np.concatenate(xs))
    s_min = T.spectrum(h)[-1]
    s_c = [T.spectrum(h[n_c * c : n_c * (c + 1), n_c * c : n_c * (c + 1)])[-1] for c in range(n_clients)]
    finals = []
    for lam in (0.0, 0.25, 0.5, 0.75, 1.0):
        res = T.federated_two_layer(xs, ys, 4096, lam, 30, k, eta_l, 1.0, np.random.default_rng(1))
        bound = T.theorem_bound(res.err, res.err_clients, lam, s_min, s_c, k, eta_l, 1.0)
        assert np.all(res.err[1:] <= bound)  # zero violations
        lin = T.linear_residuals(T.lemma4_matrix(h, [n_c] * n_clients, lam, k, eta_l, 1.0), res.residuals[0], 30)
        dev = np.abs(np.linalg.norm(lin, axis=1) - np.sqrt(res.err)) / np.sqrt(res.err)
        assert dev.max() < 0.1
        finals.append(res.err[-1])
    assert np.all(np.diff(finals) < 0)  # larger λ: faster decay of the training error
    # non-uniform λ_c (Theorem 2, both readings)
    lam_c = np.random.default_rng(8).uniform(0.1, 0.9, n_clients)
    res = T.federated_two_layer(xs, ys, 4096, lam_c, 20, k, eta_l, 1.0, np.random.default_rng(1))
    for mode in ("each", "min"):
        assert np.all(res.err[1:] <= T.theorem_bound(res.err, res.err_clients, lam_c, s_min, s_c, k, eta_l, 1.0, mode))


def test_ntk_trace_in_chunks_sums_the_same_jacobian_entries():
    """tr Θ from the Jacobian of a few samples at a time (the DigitModel's 14 M parameters need it) equals the trace of
    the whole empirical NTK, computed here from the full Jacobian with einsum; a chunk below one sample is refused."""
    torch.manual_seed(1)
    net = MLP(6, 3, hidden=(5,)).double()
    x = torch.randn(7, 6, dtype=torch.float64)
    j = T.jacobian(net, x)
    expected = float(torch.einsum("ikp,ikp->", j, j))
    for chunk in (1, 3, 7, 50):  # 3 leaves a partial last chunk
        assert T.ntk_trace(net, x, chunk) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="chunk"):
        T.ntk_trace(net, x, 0)
