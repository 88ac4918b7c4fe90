"""FedFac's motivating experiment (Figs. 1–2, spec §3.8): neuron activations of a small MLP trained on IID and
non-IID splits, their entropy and spread across neurons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pflnb.algorithms import make_algorithm
from pflnb.data.simulation_fedfac import SPLITS_MOTIVATION, digits_clients
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl.engine import Context
from pflnb.models.nets import MLP
from pflnb.theory.factor import kl_entropy

# ---- the motivating experiment (Figs. 1–2, spec §3.8) ---------------------------------------------------


@dataclass(frozen=True)
class MotivationSetting:
    """Figs. 1–2 on scikit-learn's digits: clients, hidden width, local Adam epochs, batch size, k of the entropy."""

    n_clients: int = 50
    hidden: int = 200
    epochs: int = 20
    lr: float = 1e-3
    batch_size: int = 16
    k: int = 3
    dead_std: float = 1e-6


MOTIVATION_PROFILES: dict[str, dict[str, Any]] = {"smoke": dict(n_clients=10, epochs=2), "cpu": {}, "paper": {}}


def motivation_setting(profile: str, **overrides: Any) -> MotivationSetting:
    """The profile's Figs. 1–2 setting with overrides."""
    return MotivationSetting(**{**MOTIVATION_PROFILES[profile], **overrides})


def neuron_activations(split: str, setting: MotivationSetting = MotivationSetting(), seed: int = 0) -> dict[str, Any]:
    """Figs. 1–2: every client trains its own MLP 64→m→10 from one common init (the engine's ``local`` method,
    one round of ``epochs`` Adam epochs); returns the (m, C) mean ReLU activation of neuron j of client c's
    model on client c's training data, each neuron's Kozachenko–Leonenko entropy across clients (NaN for
    dead neurons, whose across-client std is below ``dead_std``) and the clients' test accuracies."""
    if split not in SPLITS_MOTIVATION:
        raise ValueError(f"split must be one of {SPLITS_MOTIVATION}, got {split!r}")
    data = digits_clients(split, setting.n_clients, seed)
    opt = OptimConfig(lr=setting.lr, batch_size=setting.batch_size, local_epochs=setting.epochs, optimizer="adam")
    settings = RunSettings(rounds=1, seed=seed, optim=opt, progress=False)
    algorithm = make_algorithm("local", {})

    def model_fn() -> MLP:
        return MLP(64, 10, hidden=(setting.hidden,))

    with torch.random.fork_rng(devices=[]):
        record = run_simulation(algorithm, data, model_fn, settings)
    ctx = Context(data, model_fn, opt, seed, torch.device("cpu"))
    server, clients = record["final"]["server"], record["final"]["clients"]
    act = np.zeros((setting.hidden, setting.n_clients))
    with torch.no_grad():
        for cid in range(data.num_clients):
            model = algorithm.eval_module(ctx, cid, server, clients[cid])
            model.eval()
            act[:, cid] = model.features(data.clients[cid].train.x).mean(0).cpu().numpy()
    alive = act.std(1) >= setting.dead_std
    entropy = np.array([kl_entropy(a, setting.k) if ok else np.nan for a, ok in zip(act, alive)])
    return {
        "split": split,
        "activations": act,
        "entropy": entropy,
        "alive": alive,
        "domains": [c.domain for c in data.clients],
        "test_acc": np.asarray(record["evals"][-1]["test_acc"]),
    }


def entropy_summary(entropy: np.ndarray, quantiles: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)) -> dict[str, float]:
    """Quantiles and IQR of the per-neuron entropies (dead neurons, NaN, left out)."""
    e = np.asarray(entropy, dtype=np.float64)
    e = e[np.isfinite(e)]
    qs = np.quantile(e, quantiles)
    out = {f"q{int(round(100 * q))}": float(v) for q, v in zip(quantiles, qs)}
    out["iqr"] = float(np.quantile(e, 0.75) - np.quantile(e, 0.25))
    out["alive"] = int(e.size)
    return out


def activation_spread(activations: np.ndarray, dead_std: float = 1e-6) -> float:
    """Mean over live neurons of the across-client coefficient of variation (std / mean) of the mean activation."""
    act = np.asarray(activations, dtype=np.float64)
    live = act.std(1) >= dead_std
    return float((act[live].std(1) / act[live].mean(1)).mean())
