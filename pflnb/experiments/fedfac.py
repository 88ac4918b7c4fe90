"""FedFac experiment settings: the simulation study (§4.3) and the label-skew benchmarks (§5), per profile.

- ``smoke``: every code path in seconds; ``cpu``: the reduced reproduction on real Fashion-MNIST (14×14,
  a narrow 2-conv + 2-FC net) and the simulation at C = 20; ``paper``: the paper's CIFAR-10 (Dirichlet π,
  100 clients, 10 % participation) and CIFAR-100 (S classes per client) settings on the GPU, with the
  package's ``cifar-cnn`` standing in for ResNet-18 / VGG-16 (not in the package).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from pflnb.algorithms import make_algorithm
from pflnb.data.simulation_fedfac import SPLITS_MOTIVATION, Simulation, digits_clients, simulate, to_federated
from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.experiments.run import results_root
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl.engine import Context, to_jsonable
from pflnb.models.nets import MLP
from pflnb.theory.factor import fa_partition, kl_entropy

# ---- label-skew benchmarks (Table 2 analogue) -------------------------------------------------------

_FMNIST: dict[str, dict[str, Any]] = {
    "smoke": dict(num_clients=10, participation=0.5, max_samples=600, rounds=2, eval_every=1, unseen_clients=2),
    "cpu": dict(num_clients=100, participation=0.1, max_samples=20000, min_samples=8, rounds=20, eval_every=5, unseen_clients=10),
}
_COMMON = dict(
    image_size=14,
    model="fedfac-cnn",
    optimizer="adam",
    lr=1e-3,
    batch_size=32,
    local_epochs=1,
    finetune_epochs=5,
    fractions=(0.6, 0.2, 0.2),
)

SETTINGS: dict[str, dict[str, Any]] = {
    "Dir(0.1)": dict(partition="dirichlet", alpha=0.1),
    "Dir(0.5)": dict(partition="dirichlet", alpha=0.5),
    "Dir(1.0)": dict(partition="dirichlet", alpha=1.0),
    "patho(S=2)": dict(partition="pathological", classes_per_client=2),
}

# Λ for the fedfac-cnn: layer 2 = conv2 (16 channels); τ = median, κ = 0.85 (the paper's defaults).
FEDFAC_DEFAULT: dict[str, Any] = dict(layers=(2,), q=0.5, kappa=0.85)

METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "FedAvg": ("fedavg", {}),
    "FedProx": ("fedprox", {"mu": 0.01}),
    "FedPer": ("fedper", {}),
    "LG-FedAvg": ("lg-fedavg", {}),
    "FedRep": ("fedrep", {}),
    "Ditto": ("ditto", {}),
    "APFL": ("apfl", {}),
    "Local": ("local", {}),
    "FedFac static": ("fedfac", {**FEDFAC_DEFAULT, "mode": "static", "warm_clients": 10}),
    "FedFac dynamic": ("fedfac", {**FEDFAC_DEFAULT, "mode": "dynamic", "ensemble_unseen": True}),
}


def fmnist_base(profile: str, data_root: str | None = None, device: str = "auto") -> ExperimentConfig:
    """The Fashion-MNIST base config of the smoke or cpu profile (cpu: 100 clients, 10 % participation, 10 held out)."""
    return profile_config(profile, "fmnist", data_root=data_root, device=device, **_COMMON, **_FMNIST[profile])


def setting_configs(profile: str, data_root: str | None = None, device: str = "auto") -> dict[str, ExperimentConfig]:
    """Base config of every label-skew setting: Fashion-MNIST (smoke, cpu) or the paper's CIFAR settings (paper)."""
    if profile == "paper":
        return paper_configs(data_root=data_root, device=device)
    base = fmnist_base(profile, data_root, device)
    return {name: base.replace(**extra) for name, extra in SETTINGS.items()}


def config_for(base: ExperimentConfig, label: str, seed: int, **params: Any) -> ExperimentConfig:
    """The config of method ``label`` (a key of METHODS) on ``base`` (one setting), its params overridden; the
    new-client Ensemble is computed at the last round only (the notebook reads that one)."""
    method, defaults = METHODS[label]
    extra = {"ensemble_from": base.rounds} if defaults.get("ensemble_unseen") else {}
    return base.replace(method=method, method_params={**defaults, **extra, **params}, seed=seed)


# ---- feature shift: digits5-lite, one client per domain (Table 2 analogue on a second dataset) ------------

_DIGITS5: dict[str, dict[str, Any]] = {
    "smoke": dict(dataset="digits5-lite", image_size=8, rounds=2, eval_every=1),
    "cpu": dict(dataset="digits5-lite", image_size=16, rounds=30, eval_every=5),
    "paper": dict(dataset="digits5", image_size=28, rounds=100, eval_every=5),
}
DIGITS5_METHODS = ("FedAvg", "FedProx", "FedPer", "LG-FedAvg", "FedRep", "Local", "FedFac static", "FedFac dynamic")


def digits5_base(profile: str, data_root: str | None = None, device: str = "auto") -> ExperimentConfig:
    """Feature shift, one client per domain (MNIST, SVHN, USPS, SynthDigits, MNIST-M styles), full participation:
    digits5-lite (smoke, cpu; 16×16 at cpu) or the real Digits5 folder (paper), with FedFac's fedfac-cnn, Adam
    1e-3, batch 32, one local epoch per round."""
    kw = dict(_DIGITS5[profile])
    dataset = kw.pop("dataset")
    common = {k: v for k, v in _COMMON.items() if k not in ("image_size", "fractions")}
    return profile_config(
        profile, dataset, data_root=data_root, device=device, partition="by-domain", num_clients=5, **common, **kw
    )


def paper_configs(data_root: str | None = None, device: str = "auto") -> dict[str, ExperimentConfig]:
    """The paper's CIFAR-10 (Dirichlet π ∈ {0.1, 0.5, 1}) and CIFAR-100 (S ∈ {5, 10, 30}) settings: 100 clients,
    10 % participation, 80/20 train/test (validation cut from the train part), Adam 1e-3, 10 held-out clients."""
    common = dict(
        num_clients=100,
        participation=0.1,
        fractions=(0.7, 0.1, 0.2),
        image_size=None,
        model="cifar-cnn",
        optimizer="adam",
        lr=1e-3,
        batch_size=32,
        local_epochs=5,
        rounds=200,
        eval_every=5,
        unseen_clients=10,
        data_root=data_root,
        device=device,
        profile="paper",
    )
    out = {}
    for pi in (0.1, 0.5, 1.0):
        out[f"CIFAR10 Dir({pi})"] = ExperimentConfig(dataset="cifar10", partition="dirichlet", alpha=pi, **common)
    for s in (5, 10, 30):
        out[f"CIFAR100 S={s}"] = ExperimentConfig(dataset="cifar100", partition="pathological", classes_per_client=s, **common)
    return out


# ---- the simulation study (Fig. 6/7 analogue) --------------------------------------------------------


@dataclass(frozen=True)
class SimSetting:
    """One simulation setting: DGP sizes, p (shared_frac), α (alpha_cov), and the FL schedule."""

    shared_frac: float = 0.5
    alpha_cov: float = 0.4
    n_clients: int = 20
    n_per_client: int = 100
    d: int = 100
    m: int = 200
    noise_sd: float = 1.0
    rounds: int = 25
    local_epochs: int = 2
    participation: float = 1.0
    lr: float = 1e-3
    batch_size: int = 32
    kappa: float = 0.85
    warm_epochs: int = 5
    max_iter: int = 30


SIM_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_clients=6, n_per_client=40, d=20, m=40, rounds=2, local_epochs=1, warm_epochs=1),
    "cpu": {},
    "paper": dict(n_clients=100, participation=0.1, n_per_client=250, rounds=100),
}
SIM_METHODS = ("true", "oracle", "static", "dynamic", "random_fixed", "random_redrawn", "fedavg", "local")


def sim_method(label: str, sim: Simulation, setting: SimSetting) -> tuple[str, dict[str, Any]]:
    """(method, params) of a decomposition method; every split uses the true personalized share q = 1 − p."""
    q = 1.0 - setting.shared_frac
    fa = dict(layers=(1,), q=q, kappa=setting.kappa, max_iter=setting.max_iter)
    if label == "true":
        return "fedfac", {**fa, "partition": "given", "given": tuple(int(i) for i in np.flatnonzero(sim.true_shared))}
    if label == "oracle":
        shared, _ = fa_partition([sim.client_weights(c) for c in range(len(sim.x))], setting.kappa, q, setting.max_iter)
        return "fedfac", {**fa, "partition": "given", "given": tuple(int(i) for i in np.flatnonzero(shared))}
    if label == "static":
        return "fedfac", {**fa, "mode": "static", "warm_epochs": setting.warm_epochs}
    if label in ("dynamic", "dynamic_updates"):
        return "fedfac", {**fa, "mode": "dynamic", "fa_input": "updates" if label == "dynamic_updates" else "weights"}
    if label in ("random_fixed", "random_redrawn"):
        return "fedfac", {**fa, "partition": label}
    if label in ("fedavg", "local"):
        return label, {}
    raise ValueError(f"unknown simulation method {label!r}; choose one of {SIM_METHODS}")


def sim_setting(profile: str, **overrides: Any) -> SimSetting:
    """The profile's simulation setting with overrides (e.g. shared_frac, alpha_cov)."""
    return SimSetting(**{**SIM_PROFILES[profile], **overrides})


def run_sim(setting: SimSetting, label: str, seed: int, profile: str = "cpu", cache: bool = True) -> dict[str, Any]:
    """Train decomposition method ``label`` on one draw of the Eq. (8) DGP (MLP d→m→2, Adam), cached by setting."""
    key = json.dumps({"setting": asdict(setting), "label": label, "seed": seed}, sort_keys=True)
    import hashlib

    path = results_root() / profile / f"fedfac-sim-{label}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    if cache and path.exists():
        with open(path) as f:
            return json.load(f)
    sim = simulate(
        setting.n_clients,
        setting.n_per_client,
        setting.d,
        setting.m,
        setting.shared_frac,
        setting.alpha_cov,
        setting.noise_sd,
        True,
        seed,
    )
    data = to_federated(sim, seed=seed)
    method, params = sim_method(label, sim, setting)
    opt = OptimConfig(lr=setting.lr, batch_size=setting.batch_size, local_epochs=setting.local_epochs, optimizer="adam")
    settings = RunSettings(rounds=setting.rounds, participation=setting.participation, seed=seed, optim=opt, progress=False)
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        record = run_simulation(make_algorithm(method, params), data, lambda: MLP(setting.d, 2, hidden=(setting.m,)), settings)
    record.pop("final", None)
    record = to_jsonable(record)
    record.update(wall_time_s=time.perf_counter() - t0, label=label, seed=seed, setting=asdict(setting))
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = str(path) + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
    return record


def last_mean(record: dict[str, Any], k: int = 5) -> float:
    """Client-mean test accuracy averaged over the last ``k`` evaluations."""
    return float(np.mean([np.mean(e["test_acc"]) for e in record["evals"][-k:]]))


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


def train_time(record: dict[str, Any]) -> float:
    """Training time of a run (Table 7): rounds × the median per-round time of local training plus aggregation
    (evaluation and one-time start-up costs, such as imports in the first round, are left out)."""
    per = [r["time"]["local"] + r["time"]["aggregate"] for r in record["rounds"]]
    return float(len(per) * np.median(per))


def fa_time_share(record: dict[str, Any]) -> float:
    """Share of a FedFac run's local-training plus aggregation time spent in the factor analysis."""
    total = sum(r["time"]["local"] + r["time"]["aggregate"] for r in record["rounds"])
    return float(sum(r["internals"].get("fa_time", 0.0) for r in record["rounds"]) / total)
