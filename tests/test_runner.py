"""The training path's hooks (after-step, continued optimizer, no per-step host sync) and the runner setting
(config field, environment default, cache key, CLI)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pflnb.data.federated import Split
from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.fl.plan import ProxStep
from pflnb.fl.sequential import prox_step_hook
from pflnb.fl.training import OptimConfig, batch_indices, train_epochs


def _linear_problem(n=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 1, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (n,), generator=g)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3, 2)).double()
    return Split(x, y), model


def _manual_sgd(model, split, opt, seeds, momentum_buf=None):
    """Plain-tensor SGD with momentum over the epochs drawn by each seed's generator (the reference)."""
    w = {n: p.detach().clone() for n, p in model.named_parameters()}
    buf = momentum_buf if momentum_buf is not None else {}
    for seed in seeds:
        gen = torch.Generator().manual_seed(seed)
        for idx in batch_indices(len(split), opt.batch_size, gen):
            ps = {n: v.clone().requires_grad_(True) for n, v in w.items()}
            logits = split.x[idx].flatten(1) @ ps["1.weight"].T + ps["1.bias"]
            loss = torch.nn.functional.cross_entropy(logits, split.y[idx])
            grads = torch.autograd.grad(loss, list(ps.values()))
            for (n, v), g in zip(w.items(), grads):
                buf[n] = g.clone() if n not in buf else buf[n] * opt.momentum + g
                w[n] = v - opt.lr * buf[n]
    return w, buf


def test_optimizer_state_carries_over_between_calls():
    split, model = _linear_problem()
    opt = OptimConfig(lr=0.1, batch_size=4, momentum=0.9)
    expected, _ = _manual_sgd(model, split, opt, [1, 2])
    optimizer = torch.optim.SGD(model.parameters(), lr=opt.lr, momentum=opt.momentum)
    for seed in (1, 2):
        train_epochs(model, split, opt, torch.Generator().manual_seed(seed), epochs=1, optimizer=optimizer)
    for n, p in model.named_parameters():
        assert torch.allclose(p, expected[n], atol=1e-14, rtol=0)


def test_after_step_hook_runs_after_each_update_with_the_minibatch():
    split, model = _linear_problem()
    opt = OptimConfig(lr=0.1, batch_size=4)
    seen = []

    def hook(m, x, y):
        seen.append((len(y), m[1].bias.detach().clone()))

    out = train_epochs(model, split, opt, torch.Generator().manual_seed(3), epochs=2, after_step=hook)
    assert out["steps"] == len(seen) == 6 and [s[0] for s in seen] == [4, 4, 2] * 2
    assert torch.equal(seen[-1][1], model[1].bias.detach())  # the hook saw the updated parameters


def test_prox_step_hook_is_the_closed_form_prox():
    split, model = _linear_problem()
    anchor = {n: torch.full_like(p, 0.5) for n, p in model.named_parameters()}
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    hook = prox_step_hook(ProxStep(2.0, ("1.weight",)), anchor, lr=0.1)
    hook(model, split.x, split.y)
    assert torch.allclose(model[1].weight, (before["1.weight"] + 0.1 * 2.0 * 0.5) / 1.2, atol=1e-15)
    assert torch.equal(model[1].bias, before["1.bias"])  # only the listed keys move


def test_train_epochs_reads_the_loss_from_the_device_once(monkeypatch):
    split, model = _linear_problem(n=40)
    calls = []
    real_float, real_item = torch.Tensor.__float__, torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "__float__", lambda t: calls.append("float") or real_float(t))
    monkeypatch.setattr(torch.Tensor, "item", lambda t: calls.append("item") or real_item(t))
    out = train_epochs(model, split, OptimConfig(lr=0.1, batch_size=4), torch.Generator().manual_seed(0), epochs=2)
    assert out["steps"] == 20 and len(calls) == 1


def test_train_epochs_mean_loss_is_the_mean_of_the_step_losses():
    split, model = _linear_problem()
    opt = OptimConfig(lr=0.1, batch_size=4)
    losses = []

    def loss_fn(m, x, y):
        loss = torch.nn.functional.cross_entropy(m(x), y)
        losses.append(float(loss.detach()))
        return loss

    out = train_epochs(model, split, opt, torch.Generator().manual_seed(0), epochs=1, loss_fn=loss_fn)
    assert out["loss"] == sum(losses) / 3


def test_runner_field_defaults_to_the_environment_and_is_not_hashed(monkeypatch):
    monkeypatch.setenv("PFLNB_RUNNER", "batched")
    cfg = profile_config("smoke")
    assert cfg.runner == "batched" and cfg.settings(progress=False).runner == "batched"
    monkeypatch.delenv("PFLNB_RUNNER")
    assert ExperimentConfig().runner == "auto"
    assert cfg.key() == cfg.replace(runner="sequential").key()
    with pytest.raises(ValueError, match="runner must be one of"):
        cfg.replace(runner="fast").validate()


def test_cli_passes_the_runner(monkeypatch):
    import argparse

    from pflnb import cli

    args = argparse.Namespace(
        set=[],
        param=[],
        data_root=None,
        device=None,
        runner="sequential",
        seeds=[0],
        profile="smoke",
        dataset="digits5-lite",
        checkpoint_every=0,
    )
    assert {c.runner for c in cli._configs(args, ["fedavg"])} == {"sequential"}
