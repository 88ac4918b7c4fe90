"""Exact mixing / learning-rate identities E1–E8 (spec §3.1), the multi-step deviation, Lemma 1 and the
noise floor of Theorem 3 (spec §3.2). Float64 throughout; exact identities to 1e-10."""

import numpy as np
import pytest

from pflnb.papers.pmixfed import mixup as M

TOL = 1e-10


@pytest.fixture(scope="module")
def toy():
    clients, omega = M.quadratic_clients(k=4, d=6, seed=0)
    g = np.random.default_rng(1).standard_normal(6)
    return clients, omega, g


@pytest.mark.parametrize("lam", [0.0, 0.1, 0.3, 0.5, 0.7, 1.0])
def test_e1_one_step_mixing_is_fedsgd_with_lr_one_minus_lambda(toy, lam):
    clients, omega, g = toy
    exact, paper = M.e1_residuals(lam, 0.1, clients, omega, g)
    assert exact < TOL
    if abs(lam - 0.5) < 1e-12:
        assert paper < TOL  # the printed λ = η_g/η_l agrees with the correct one only at λ = 1/2
    else:
        assert paper > 1e-3  # documented erratum of Thm 1/4: λ = η_g/η_l is wrong


def test_e1_holds_for_a_non_quadratic_loss():
    rng = np.random.default_rng(2)
    grads, omega = [], rng.dirichlet(np.ones(3))
    for k in range(3):
        x = rng.standard_normal((40, 5)) + k
        grads.append(M.logistic_loss_grad(x, (rng.random(40) < 0.5).astype(float), c=0.01))
    g = rng.standard_normal(5)
    for lam in (0.2, 0.9):
        mixed = M.mixed_round(g, grads, omega, lam, 0.3, 1)
        assert np.max(np.abs(mixed - M.fedsgd_step(g, grads, omega, (1 - lam) * 0.3))) < TOL


def test_e2_layerwise_mixing_is_a_per_layer_learning_rate(toy):
    clients, omega, g = toy
    lam = np.repeat([0.9, 0.6, 0.0], 2)  # three "layers" of two coordinates
    grads = [c.grad for c in clients]
    mixed = M.mixed_round(g, grads, omega, lam, 0.1, 1)
    assert np.max(np.abs(mixed - M.fedsgd_step(g, grads, omega, (1 - lam) * 0.1))) < TOL
    frozen = M.mixed_round(g, grads, omega, np.repeat([1.0, 0.5, 0.0], 2), 0.1, 1)
    np.testing.assert_array_equal(frozen[:2], g[:2])  # λ_i = 1 freezes the layer


@pytest.mark.parametrize("steps", [1, 2, 7])
def test_e3_any_local_steps_is_fedavg_with_server_lr(toy, steps):
    clients, omega, g = toy
    grads = [c.grad for c in clients]
    for lam in (0.2, 0.75):
        mixed = M.mixed_round(g, grads, omega, lam, 0.1, steps)
        assert np.max(np.abs(mixed - M.fedavg_server_lr(g, grads, omega, 0.1, steps, 1 - lam))) < TOL


def test_e4_adam_first_step_only():
    rng = np.random.default_rng(3)
    w, grad = rng.standard_normal(7), rng.standard_normal(7)
    for lam in (0.3, 0.6):
        mixed = M.mix(w, M.adam_first_step(w, grad, 0.01), lam)
        assert np.max(np.abs(mixed - M.adam_first_step(w, grad, (1 - lam) * 0.01))) < TOL
    q = M.Quadratic(np.diag([2.0, 1.0, 0.5]), np.zeros(3))
    w0 = np.array([1.0, -2.0, 0.5])
    assert M.adam_deviation(w0, q.grad, 0.1, 0.5, 1) < TOL
    assert M.adam_deviation(w0, q.grad, 0.1, 0.5, 5) > 1e-4  # from step 2 on it is only approximate


def test_e5_ema_form(toy):
    clients, omega, g = toy
    rng = np.random.default_rng(4)
    averages = [rng.standard_normal(6) for _ in range(9)]
    for lam in (0.0, 0.4, 0.95, np.linspace(0.1, 0.9, 6)):
        rounds = M.ema_rounds(g, averages, lam)
        assert np.max(np.abs(rounds[-1] - M.ema_closed_form(g, averages, lam))) < TOL


def test_e6_mixing_keeps_fedavgs_fixed_point_and_slows_it(toy):
    clients, omega, g = toy
    m, v = M.fedavg_affine_map(clients, omega, 0.1, 5)
    star = M.fixed_point(m, v)
    for lam in (0.5, 0.9):
        assert np.max(np.abs(M.fixed_point(m, v, lam) - star)) < TOL
        mixed_map = lam * np.eye(6) + (1 - lam) * m
        assert np.max(np.abs(mixed_map @ star + (1 - lam) * v - star)) < TOL
        # the mixed spectrum is λ + (1 − λ)·spec(M): slower convergence for larger λ
        rho = np.max(np.abs(np.linalg.eigvals(mixed_map)))
        assert rho >= np.max(np.abs(np.linalg.eigvals(m))) - 1e-12
    errs = {lam: np.linalg.norm(M.iterate_mixed_fedavg(g, m, v, lam, 30)[-1] - star) for lam in (0.0, 0.5, 0.9)}
    assert errs[0.0] < errs[0.5] < errs[0.9]
    # the fixed point is not the global minimiser: mixing cannot remove client drift
    a = sum(o * c.A for o, c in zip(omega, clients))
    w_opt = np.linalg.solve(a, sum(o * c.A @ c.b for o, c in zip(omega, clients)))
    assert np.linalg.norm(star - w_opt) > 1e-3


def test_e7_broadcast_mixing_is_a_proximal_gradient_step(toy):
    rng = np.random.default_rng(5)
    local, g = rng.standard_normal(6), rng.standard_normal(6)
    for lam, alpha in ((0.3, 2.0), (0.8, 0.1)):
        s = lam / (2 * alpha)
        assert np.max(np.abs(M.mix(g, local, lam) - M.prox_step(local, g, alpha, s))) < TOL


def test_e8_mix_then_step_vs_joint_step(toy):
    clients, _, _ = toy
    q = clients[0]
    rng = np.random.default_rng(6)
    local, g = rng.standard_normal(6), rng.standard_normal(6)
    lam, lr = 0.4, 0.05
    diff = M.mix_then_step(local, g, lam, q.grad, lr) - M.joint_step(local, g, lam, q.grad, lr)
    np.testing.assert_allclose(diff, -lr * q.A @ (lam * (g - local)), atol=TOL)
    assert np.max(np.abs(M.mix_then_step(g, g, lam, q.grad, lr) - M.joint_step(g, g, lam, q.grad, lr))) < TOL


def test_deviation_closed_form_and_leading_term(toy):
    clients, _, _ = toy
    q = clients[1]
    w0 = np.random.default_rng(7).standard_normal(6)
    e0, lr = w0 - q.b, 0.05
    for lam in (0.3, 0.5, 0.9):
        for r in (1, 2, 5, 10):
            sim = M.deviation_simulated(q, w0, lr, lam, r)
            assert np.max(np.abs(sim - M.deviation_closed_form(q.A, e0, lr, lam, r))) < 1e-12
        # r = 2: the leading term is the whole deviation
        np.testing.assert_allclose(M.deviation_simulated(q, w0, lr, lam, 2), M.deviation_leading(q.A, e0, lr, lam, 2), atol=1e-12)
        assert np.linalg.norm(M.deviation_simulated(q, w0, lr, lam, 1)) < 1e-12  # exact at r = 1
    for r in (2, 5):  # zero at λ ∈ {0, 1}, largest at λ = 1/2
        norms = [np.linalg.norm(M.deviation_simulated(q, w0, lr, lam, r)) for lam in (0.0, 0.25, 0.5, 0.75, 1.0)]
        assert norms[0] < 1e-12 and norms[-1] < 1e-12 and np.argmax(norms) == 2


def test_lemma1_equality_isotropic_and_inequality_anisotropic():
    lhs, rhs = M.lemma1_sides(np.full(4, 2.0), np.ones(4), 0.1, 0.5, 10)
    assert abs(lhs - rhs) < 1e-12  # equality for the isotropic quadratic
    lhs, rhs = M.lemma1_sides(np.array([2.0, 1.0, 0.5, 0.1]), np.ones(4), 0.1, 0.5, 10)
    assert lhs < rhs - 1e-3
    mc_lhs, mc_rhs = M.lemma1_monte_carlo(np.array([2.0, 1.0, 0.5, 0.1]), np.ones(4), 0.1, 0.5, 10, 20000)
    assert abs(mc_lhs - lhs) < 0.02 and abs(mc_rhs - rhs) < 0.02 and mc_lhs < mc_rhs


def test_theorem3_noise_floor():
    floor = M.noise_floor(2.0, 0.1, 0.5)
    assert abs(floor - 0.02 / 0.36) < 1e-12  # 0.0556 (spec §3.2)
    avg = M.grad_norm_running_average(2.0, 0.1, 0.5, 20000)
    assert abs(avg[-1] - floor) < 0.01 * floor + 1e-3  # plateaus: not O(1/T)
    det = M.grad_norm_running_average(2.0, 0.1, 0.0, 2000)
    assert abs(det[-1] * 2000 - det[999] * 1000) < 1e-9 * det[0]  # σ = 0: T·average is constant, i.e. O(1/T)
    assert det[-1] < 1e-2 * det[0]


def test_adam_deviation_curve_matches_single_runs():
    q = M.Quadratic(np.diag([2.0, 1.0, 0.5]), np.zeros(3))
    w0 = np.array([1.0, -2.0, 0.5])
    curve = M.adam_deviation_curve(w0, q.grad, 0.1, 0.3, 6)
    single = [M.adam_deviation(w0, q.grad, 0.1, 0.3, r) for r in range(1, 7)]
    np.testing.assert_allclose(curve, single, atol=1e-14)
    assert curve[0] < TOL and curve[-1] > 1e-4
