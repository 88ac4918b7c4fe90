"""Stacked runs: several runs of one method (other seeds, data and learning rates) trained by one batched call per
round give each run's own sequential record (float64, CPU), and the per-row learning rate is the rate of its row."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_runner_batched import ADAM, SGD, assert_same, data64, max_diff
from torch import nn

from pflnb.algorithms import list_methods, make_algorithm
from pflnb.fl import BatchedRunner, OptimConfig, RunSettings, SequentialRunner, run_simulation, run_stacked, simulate
from pflnb.fl import batched as B
from pflnb.fl import functional as FN
from pflnb.fl import grouping as G
from pflnb.fl.plan import Phase
from pflnb.fl.runner import local_plan_gap
from pflnb.models import build_model

TOL = 1e-10
# Three runs as a tuning grid and verdict seeds make them: two seeds (other data, init and sampling) at one rate, and a
# third at another rate; rounds 2, 60 % participation (each run samples its own clients).
RUNS = ((1, 0, 0.05), (2, 1, 0.05), (1, 0, 0.02))  # (seed, data seed, lr)


def _setups(method, params=None, opt=SGD, model="small-bn-cnn", rounds=2, participation=0.6, runs=RUNS):
    out = []
    for seed, data_seed, lr, *own in runs:
        params = own[0] if own else params
        data = data64(seed=data_seed)

        def fn(data=data):
            return build_model(model, data.input_shape, data.num_classes).double()

        settings = RunSettings(
            rounds=rounds, participation=participation, optim=OptimConfig(**{**opt.__dict__, "lr": lr}), progress=False, seed=seed
        )
        out.append((method, params, data, fn, settings))
    return out


def run_sequential_and_stacked(method, params=None, chunk=16, **kwargs):
    """Each run alone with the sequential runner, and all of them stacked (one batched call a round)."""
    setups = _setups(method, params, **kwargs)
    seq = [
        run_simulation(make_algorithm(m, p), d, fn, s, runner=SequentialRunner())
        for m, p, d, fn, s in _setups(method, params, **kwargs)
    ]
    sims = [simulate(make_algorithm(m, p), d, fn, s, runner=SequentialRunner()) for m, p, d, fn, s in setups]
    stacked = run_stacked(sims, BatchedRunner(cpu_chunk=chunk))
    return seq, stacked


def assert_each_run_same(seq, stacked, tol=TOL):
    for a, b in zip(seq, stacked, strict=True):
        assert b["runner"]["name"] == "stacked" and b["runner"]["notes"] == [], b["runner"]
        assert_same(a, {**b, "runner": {"name": "batched", "notes": []}}, tol)
    assert max_diff(seq[0]["final"], seq[2]["final"]) > 1e-3  # the two rates train to different states


BATCHABLE = [m for m in list_methods() if local_plan_gap(make_algorithm(m)) is None]


@pytest.mark.parametrize("method", BATCHABLE)
def test_stacked_runs_equal_their_sequential_runs(method):
    """Every method whose local work is a declared plan: three runs (two seeds, two rates) stacked equal each run alone."""
    # FedFac's dynamic split is refitted from the trained weights every round, and where the fit stops amplifies
    # rounding (tests/test_runner_batched.py); its local training is checked with the split held static.
    params = {"mode": "static"} if method == "fedfac" else None
    assert_each_run_same(*run_sequential_and_stacked(method, params))


@pytest.mark.parametrize(
    ("method", "params", "opt"),
    [("fedavg", None, ADAM), ("ditto", {"prox": "proximal", "lam": 0.5}, SGD), ("apfl", None, SGD)],
    ids=["fedavg-adam", "ditto-proxstep", "apfl"],
)
def test_stacked_runs_equal_sequential_in_small_chunks(method, params, opt):
    """Chunks of 4 rows cut across runs (rows of several runs in one chunk, one run's clients in several chunks);
    Ditto's proximal step reads the row's own rate (``b.lr``) inside the batched step."""
    model = "cnn" if opt is ADAM else "small-bn-cnn"
    assert_each_run_same(*run_sequential_and_stacked(method, params, chunk=4, opt=opt, model=model))


def test_one_batched_call_trains_rows_of_several_runs_and_rates(monkeypatch):
    """The rows of one chunk come from several runs (their own contexts) and carry their own learning rates."""
    real, seen = B.run_chunk, []

    def spy(ctx, fm, plans, ctxs=None):
        seen.append(({id(c) for c in ctxs}, G.row_lrs(plans, 0)))
        return real(ctx, fm, plans, ctxs)

    monkeypatch.setattr(B, "run_chunk", spy)
    run_sequential_and_stacked("fedavg")
    assert len(seen) == 2  # one call a round for the three runs' clients
    assert all(len(ctxs) == 3 for ctxs, _ in seen)
    assert all(lrs is not None and set(lrs) == {0.05, 0.02} for _, lrs in seen)


# A tuning grid over a hyperparameter a training term holds, with the rate: FedProx's μ (Prox.weight), Ditto's λ in
# its proximal step (ProxStep.lam, which also reads the row's rate) and in its proximal loss (Prox.weight).
HYPER_RUNS = {
    "fedprox": ((1, 0, 0.05, {"mu": 0.01}), (2, 1, 0.05, {"mu": 0.1}), (1, 0, 0.02, {"mu": 0.3})),
    "ditto": (
        (1, 0, 0.05, {"prox": "proximal", "lam": 0.1}),
        (2, 1, 0.05, {"prox": "proximal", "lam": 0.5}),
        (1, 0, 0.02, {"prox": "proximal", "lam": 1.0}),
    ),
    "ditto-loss": ((1, 0, 0.05, {"lam": 0.1}), (2, 1, 0.05, {"lam": 0.5}), (1, 0, 0.02, {"lam": 1.0})),
}


def test_a_float_a_term_does_not_declare_per_row_keeps_runs_in_separate_groups(monkeypatch):
    """MOON's term branches on μ in Python: μ is not declared per row, so runs of two μ train in two groups of one
    round call (a traced μ would fail the branch) and still equal their sequential runs."""
    real, groups = B.run_chunk, []

    def spy(ctx, fm, plans, ctxs=None):
        groups.append({p.phases[0].terms[0].mu for p in plans})
        return real(ctx, fm, plans, ctxs)

    monkeypatch.setattr(B, "run_chunk", spy)
    runs = ((1, 0, 0.05, {"mu": 0.5}), (2, 1, 0.05, {"mu": 1.0}))
    seq, stacked = run_sequential_and_stacked("moon", runs=runs)
    for a, b in zip(seq, stacked):
        assert_same(a, {**b, "runner": {"name": "batched", "notes": []}})
    assert all(len(mus) == 1 for mus in groups) and len(groups) == 4  # two groups a round, one μ each


@pytest.mark.parametrize("name", sorted(HYPER_RUNS))
def test_stacked_runs_of_several_hyperparameters_equal_their_sequential_runs(name, monkeypatch):
    """Runs that differ in a term's hyperparameter train in one chunk, each row with its own value."""
    real, seen = B.run_chunk, []

    def spy(ctx, fm, plans, ctxs=None):
        seen.append({k for j in range(len(plans[0].phases)) for k in G.row_values(plans, j)})
        return real(ctx, fm, plans, ctxs)

    monkeypatch.setattr(B, "run_chunk", spy)
    method = name.partition("-")[0]
    assert_each_run_same(*run_sequential_and_stacked(method, runs=HYPER_RUNS[name]))
    assert any(any(k.startswith("term") for k in keys) for keys in seen)  # a hyperparameter varied inside one chunk
    assert len(seen) == 2  # one batched call a round for the three runs


def test_runs_of_other_architectures_train_apart():
    """A run whose model differs (another width) is never stacked with the others: the results still equal."""
    setups = _setups("fedavg")
    wide = _setups("fedavg", model="cnn")[:1]
    seq = [run_simulation(make_algorithm(m, p), d, fn, s, runner=SequentialRunner()) for m, p, d, fn, s in setups + wide]
    sims = [simulate(make_algorithm(m, p), d, fn, s, runner=SequentialRunner()) for m, p, d, fn, s in setups + wide]
    runner = BatchedRunner()
    stacked = run_stacked(sims, runner)
    for a, b in zip(seq, stacked):
        assert_same(a, {**b, "runner": {"name": "batched", "notes": []}})
    assert len(runner._fm) == 2


@pytest.mark.parametrize("opt", [OptimConfig(lr=0.1, momentum=0.9, weight_decay=0.01), OptimConfig(lr=0.01, optimizer="adam")])
def test_functional_optimizer_with_a_rate_per_row_equals_torch_optim_at_that_rate(opt):
    """Row c at rate lrs[c] moves as torch.optim at lrs[c] (computed independently, one optimizer per row)."""
    torch.manual_seed(0)
    lrs = [opt.lr, opt.lr * 3, opt.lr / 7]
    p0 = torch.randn(3, 4, 5, dtype=torch.float64)
    grads = [torch.randn(3, 4, 5, dtype=torch.float64) for _ in range(4)]
    active = [torch.tensor([True, True, True]), torch.tensor([True, False, True])] * 2
    fo = FN.FunctionalOptimizer(Phase(opt), {"w": p0}, torch.stack(active), lrs=lrs)
    params = {"w": p0.clone()}
    for g, act in zip(grads, active):
        fo.step(params, {"w": g}, act, torch.tensor(lrs, dtype=torch.float64))
    for c in range(3):
        p = nn.Parameter(p0[c].clone())
        if opt.optimizer == "adam":
            ref = torch.optim.Adam([p], lr=lrs[c])
        else:
            ref = torch.optim.SGD([p], lr=lrs[c], momentum=opt.momentum, weight_decay=opt.weight_decay)
        for g, act in zip(grads, active):
            if act[c]:
                p.grad = g[c].clone()
                ref.step()
        assert torch.allclose(params["w"][c], p.detach(), atol=1e-14, rtol=0)


def test_plan_signature_leaves_the_rate_out_and_keeps_the_rest():
    a, b = Phase(OptimConfig(lr=0.1)), Phase(OptimConfig(lr=0.3))
    c = Phase(OptimConfig(lr=0.1, momentum=0.9))
    from pflnb.fl.plan import LocalPlan

    sig = [G.plan_signature(LocalPlan(0, {"main": {}}, (p,))) for p in (a, b, c)]
    assert sig[0] == sig[1] and sig[0] != sig[2]
    assert G.row_lrs([LocalPlan(0, {}, (a,)), LocalPlan(1, {}, (b,))], 0) == [0.1, 0.3]
    assert G.row_lrs([LocalPlan(0, {}, (a,)), LocalPlan(1, {}, (a,))], 0) is None


# ---------------------------------------------------------------------------------------------- on the job layer


def _smoke(**kw):
    from pflnb.experiments import profile_config

    return profile_config("smoke", "digits5-lite", **kw)


def test_stack_groups_put_a_sweeps_compatible_runs_together():
    """Seeds and rates of one config stack; another method, device or runner policy does not."""
    from pflnb.experiments.jobs import RunJob, stack_groups

    grid = [_smoke(method=m, seed=s, lr=lr, runner="stacked") for m in ("fedavg", "local") for s in (0, 1) for lr in (0.1, 0.2)]
    others = [_smoke(method="fedavg", seed=0, runner="sequential"), _smoke(method="fedavg", seed=5, lr=0.3, runner="stacked")]
    jobs = [RunJob(c) for c in grid + others]
    assert stack_groups(jobs) == [[0, 1, 2, 3, 9], [4, 5, 6, 7], [8]]
    assert stack_groups(jobs, most=3) == [[0, 1, 2], [3, 9], [4, 5, 6], [7], [8]]
    assert RunJob(grid[0], keep_final=True).stack_key() is None  # final states are per run
    mus = [RunJob(_smoke(method="fedprox", method_params={"mu": mu}, runner="stacked")) for mu in (0.01, 0.1)]
    assert mus[0].stack_key() == mus[1].stack_key()  # a float hyperparameter is a per-row value
    modes = [RunJob(_smoke(method="fedprox", method_params={"prox_squared": b}, runner="stacked")) for b in (True, False)]
    assert modes[0].stack_key() != modes[1].stack_key()
    assert RunJob(_smoke(runner="auto")).stack_key() is None  # auto stacks on CUDA only
    with pytest.raises(ValueError, match="PFLNB_STACK_MAX"):
        stack_groups(jobs, most=0)


def _train_losses(record):
    return [m["loss"] for r in record["rounds"] for m in r["client_metrics"].values()]


def test_run_many_stacks_a_sweep_and_caches_each_run_under_its_own_key(tmp_path):
    """A stacked sweep gives each run its own record and cache file, and the numbers of the runs one at a time (float32
    on the CPU: equal to rounding, amplified by training: under MKL's vendor-neutral branch a batched and a single
    matrix product round differently in the last bits, which two rounds carry to about 1e-2 in a training loss; the
    float64 tests above are the proof of equality); a second call loads them all."""
    from pflnb.experiments import cache_path, run_many
    from pflnb.experiments.executors import Serial

    configs = [_smoke(method="fedprox", seed=s, lr=lr) for s in (0, 1) for lr in (0.05, 0.1)]
    alone = run_many([c.replace(runner="sequential") for c in configs], cache=False, progress=False, executor=Serial())
    stacked = run_many([c.replace(runner="stacked") for c in configs], root=tmp_path, progress=False, executor=Serial())
    for a, b, cfg in zip(alone, stacked, configs):
        assert b["runner"]["name"] == "stacked" and b["key"] == a["key"] == cfg.key()
        assert b["config"]["seed"] == cfg.seed and b["config"]["lr"] == cfg.lr
        assert cache_path(cfg, tmp_path).exists()
        assert abs(a["summary"]["test_acc"] - b["summary"]["test_acc"]) < 0.02
        assert np.allclose(_train_losses(a), _train_losses(b), rtol=0, atol=2e-2)
    again = run_many([c.replace(runner="stacked") for c in configs], root=tmp_path, progress=False, executor=Serial())
    assert [r["evals"] for r in again] == [r["evals"] for r in stacked]


# ---------------------------------------------------------------------------------------------- on a GPU


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["fedavg", "fedprox", "fedbn", "ditto", "fedrep", "fedpg", "pmixfed"])
def test_stacked_runs_equal_sequential_on_cuda_float64(method):
    """The three runs stacked on CUDA equal each run alone with the sequential runner on CUDA (float64)."""
    import pflnb

    setups = _setups(method)
    with pflnb.determinism():
        seq, sims = [], []
        for m, p, d, fn, s in setups:
            s.device = "cuda"
            seq.append(run_simulation(make_algorithm(m, p), d, fn, s, runner=SequentialRunner()))
            sims.append(simulate(make_algorithm(m, p), d, fn, s, runner=BatchedRunner()))
        stacked = run_stacked(sims)
    assert_each_run_same(seq, stacked)
