"""Determinism on CUDA (marked ``gpu``; skipped without CUDA): under ``pflnb.determinism`` two runs of the same
config on one GPU give identical records, and the exact identities the notebooks rely on hold on the GPU."""

from __future__ import annotations

import pytest
import torch
from conftest import make_toy_data

import pflnb
from pflnb.algorithms import list_methods, make_algorithm
from pflnb.experiments import ExperimentConfig, run
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.models import build_model

pytestmark = pytest.mark.gpu


def _run(method, params=None, model="small-bn-cnn", data=None, rounds=2):
    data = data or make_toy_data()
    settings = RunSettings(rounds=rounds, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, device="cuda")
    fn = lambda: build_model(model, data.input_shape, data.num_classes)  # noqa: E731
    with pflnb.determinism():
        return run_simulation(make_algorithm(method, params), data, fn, settings)


def _evals(record):
    return record["evals"]


@pytest.mark.parametrize("method", list_methods())
def test_two_runs_on_the_gpu_are_identical(method):
    a, b = _run(method), _run(method)
    assert _evals(a) == _evals(b)
    for sa, sb in zip(a["final"]["clients"], b["final"]["clients"]):
        for key in set(sa) & {"model", "personal", "offline", "v", "theta"}:
            for k in sa[key]:
                assert torch.equal(sa[key][k], sb[key][k]), (method, key, k)


def test_fedco2_without_transfer_is_fedbn_and_local_on_the_gpu():
    """Algorithm 2 with both transfers off: online model = FedBN, offline model = Local, bit for bit (notebook 02)."""
    data = make_toy_data()
    co2 = _run("fedco2", {"intra": "none", "inter": "none"}, data=data, rounds=3)
    fedbn, local = _run("fedbn", data=data, rounds=3), _run("local", data=data, rounds=3)
    assert [e["extra"]["online_test_acc"] for e in co2["evals"]] == [e["test_acc"] for e in fedbn["evals"]]
    assert [e["extra"]["offline_test_acc"] for e in co2["evals"]] == [e["test_acc"] for e in local["evals"]]
    for c, f in zip(co2["final"]["clients"], fedbn["final"]["clients"]):
        assert all(torch.equal(c["personal"][k], f["personal"][k]) for k in f["personal"])


def _close(a, b, tol=1e-5):
    return all(torch.allclose(a[k].double(), b[k].double(), atol=tol, rtol=0) for k in a if a[k].is_floating_point())


def test_lgmix_fixed_zero_is_fedavg_and_one_is_local_on_the_gpu():
    """The limits of tests/test_lgmix.py, to the same tolerance (they are identities up to rounding: u + Δu is not
    bit for bit the average of the local models)."""
    data = make_toy_data()
    zero, fedavg = _run("lgmix", {"lambda_mode": "fixed", "lam": 0.0}, data=data), _run("fedavg", data=data)
    assert _close(zero["final"]["server"]["model"], fedavg["final"]["server"]["model"])
    one, local = _run("lgmix", {"lambda_mode": "fixed", "lam": 1.0}, data=data), _run("local", data=data)
    for c_mix, c_loc in zip(one["final"]["clients"], local["final"]["clients"]):
        assert _close(c_mix["model"], c_loc["personal"])


def test_run_records_are_identical_across_two_fresh_runs_on_the_gpu(tmp_path):
    cfg = ExperimentConfig(rounds=2, image_size=16, model="small-bn-cnn", profile="smoke", device="cuda", method="fedco2")
    a = run(cfg, cache=False, progress=False, root=tmp_path)
    b = run(cfg, cache=False, progress=False, root=tmp_path)
    assert a["evals"] == b["evals"] and a["config"]["deterministic"] is True
