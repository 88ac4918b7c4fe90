"""FedFac's training time (Table 7): per-round training times from run records, and the ratio against FedAvg timed in
pairs in one process (:class:`PairedTimingJob`: FedAvg and FedFac alternated), which the claim reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import build_federated
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.jobs import FIX, Job, digest
from pflnb.experiments.paper import ExperimentResult
from pflnb.fl import run_simulation
from pflnb.models import build_model


def round_train_times(record: dict[str, Any]) -> list[float]:
    """Per round of a run, its training time (Table 7): local training plus aggregation (where FedFac's factor analysis
    runs); evaluation is left out."""
    return [float(r["time"]["local"] + r["time"]["aggregate"]) for r in record["rounds"]]


def train_time(record: dict[str, Any]) -> float:
    """Training time of a run (Table 7): rounds × the median per-round time of local training plus aggregation
    (evaluation and one-time start-up costs, such as imports in the first round, are left out)."""
    per = round_train_times(record)
    return float(len(per) * np.median(per))


def fa_time_share(record: dict[str, Any]) -> float:
    """Share of a FedFac run's local-training plus aggregation time spent in the factor analysis."""
    total = sum(r["time"]["local"] + r["time"]["aggregate"] for r in record["rounds"])
    return float(sum(r["internals"].get("fa_time", 0.0) for r in record["rounds"]) / total)


def time_table(table2: ExperimentResult) -> pd.DataFrame:
    """Table 7: per (setting, seed, label) training time, its ratio to FedAvg's, and FedFac's FA time share."""
    t2, records = table2.table, table2.records
    t = t2[["setting", "seed", "label"]].copy()
    t["train_time_s"] = [train_time(r) for r in records]
    t["fa_share"] = [
        fa_time_share(r) if row["label"].startswith("FedFac") else np.nan for (_, row), r in zip(t2.iterrows(), records)
    ]
    ref = t[t.label == "FedAvg"].set_index(["setting", "seed"])["train_time_s"]
    t["ratio"] = [row.train_time_s / ref.get((row.setting, row.seed), np.nan) for row in t.itertuples()]
    return t


# ---- Table 7: FedFac's training time against FedAvg's, timed in pairs -------------------------------------------


def alternation(names: Sequence[str], repetitions: int) -> list[tuple[int, str]]:
    """The order of a paired timing: each repetition runs every method once, in the order given (A B A B ...)."""
    return [(rep, name) for rep in range(repetitions) for name in names]


def paired_ratios(times: Mapping[str, Sequence[Sequence[float]]], reference: str, method: str) -> list[float]:
    """Per repetition, ``method``'s median per-round training time over ``reference``'s (``times``: name → per
    repetition, the per-round times)."""
    if len(times[reference]) != len(times[method]):
        raise ValueError(f"paired_ratios needs as many repetitions of {method!r} as of {reference!r}")
    return [float(np.median(m) / np.median(r)) for r, m in zip(times[reference], times[method])]


@dataclass(frozen=True)
class PairedTimingJob(Job):
    """Table 7's ratio from a paired timing in one process: the ``reference`` run (FedAvg) and the ``method`` run
    (FedFac) of one setting and seed, alternated (A B A B ...) for ``repetitions`` repetitions of ``rounds`` rounds
    each, on the same data (built once; the held-out clients left out, they take no part in training), after one
    untimed round of each (start-up costs). Each repetition's ratio is the method's median per-round training time
    (local training plus aggregation, :func:`round_train_times`) over the reference's; the record holds the order
    run, every per-round time, the ratios, their median and range. A measurement: cached like any job (keyed by
    both configs, the names, repetitions and rounds); run it alone (:class:`~pflnb.experiments.executors.Serial`),
    so that nothing else runs beside it."""

    reference: ExperimentConfig
    method: ExperimentConfig
    names: tuple[str, str] = ("FedAvg", "FedFac dynamic")
    setting: str = ""
    repetitions: int = 5
    rounds: int = 3

    @property
    def profile(self) -> str:  # type: ignore[override]
        return self.reference.profile

    @property
    def threads(self) -> int:  # type: ignore[override]
        return self.reference.threads

    @property
    def seed(self) -> int:
        return self.reference.seed

    def key(self) -> str:
        return digest("paired timing", self.reference.key(), self.method.key(), list(self.names), self.repetitions, self.rounds)

    def label(self) -> str:
        return "fedfac-paired-timing"

    def details(self) -> dict[str, Any]:
        configs = {n: c.to_dict() for n, c in zip(self.names, (self.reference, self.method))}
        return {**self.describe(), "repetitions": self.repetitions, "rounds": self.rounds, "configs": configs}

    def validate(self) -> None:
        self.reference.validate()
        self.method.validate()
        if len(self.names) != 2 or self.names[0] == self.names[1]:
            raise ValueError(f"a paired timing names two different methods, got {self.names!r}")
        if self.reference.data_spec() != self.method.data_spec() or self.reference.seed != self.method.seed:
            raise ValueError("a paired timing runs both methods on the same data and seed; the two configs differ there")
        if self.reference.threads != self.method.threads:
            raise ValueError("a paired timing runs both methods with the same thread count")
        for name, value, low in (("repetitions", self.repetitions, 2), ("rounds", self.rounds, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")

    def check(self, record: Any, path: Any) -> dict[str, Any]:
        ok = (
            isinstance(record, dict)
            and record.get("names") == list(self.names)
            and all(len(record.get("times", {}).get(n, [])) == self.repetitions for n in self.names)
            and len(record.get("ratios", [])) == self.repetitions
        )
        if not ok:
            raise ValueError(f"cached record {path} is not this paired timing's; {FIX}")
        return record

    def _timed(self, cfg: ExperimentConfig, data: Any, rounds: int) -> list[float]:
        """The per-round training times of ``rounds`` rounds of ``cfg`` on ``data``."""
        cfg = cfg.replace(rounds=rounds, eval_every=rounds)

        def model_fn() -> Any:
            return build_model(cfg.model, data.input_shape, data.num_classes)

        with pflnb.determinism(cfg.deterministic):
            record = run_simulation(make_algorithm(cfg.method, cfg.method_params), data, model_fn, cfg.settings(False))
        return round_train_times(record)

    def compute(self, root: Any, progress: bool = False) -> dict[str, Any]:
        data = build_federated(self.reference.data_spec(), seed=self.reference.seed)
        data = dataclasses.replace(data, unseen=[])
        configs = dict(zip(self.names, (self.reference, self.method)))
        for name in self.names:  # start-up costs (first calls of the kernels, allocations): untimed
            self._timed(configs[name], data, 1)
        order: list[list[Any]] = []
        times: dict[str, list[list[float]]] = {name: [] for name in self.names}
        for rep, name in alternation(self.names, self.repetitions):
            times[name].append(self._timed(configs[name], data, self.rounds))
            order.append([rep, name])
        ratios = paired_ratios(times, *self.names)
        return {
            "names": list(self.names),
            "setting": self.setting,
            "seed": self.seed,
            "repetitions": self.repetitions,
            "rounds": self.rounds,
            "order": order,
            "times": times,
            "ratios": ratios,
            "median": float(np.median(ratios)),
            "min": float(min(ratios)),
            "max": float(max(ratios)),
            "threads": torch.get_num_threads(),
            "configs": {name: cfg.to_dict() for name, cfg in configs.items()},
        }


def paired_timing_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """One row per repetition of a paired timing: the setting and seed, each method's median per-round training time
    (s) and the ratio (what Table 7's claim reads)."""
    reference, method = record["names"]
    med = {name: [float(np.median(r)) for r in record["times"][name]] for name in (reference, method)}
    return pd.DataFrame(
        {
            "setting": record["setting"],
            "seed": record["seed"],
            "repetition": range(len(record["ratios"])),
            "rounds": record["rounds"],
            f"{reference} s/round": med[reference],
            f"{method} s/round": med[method],
            "ratio": record["ratios"],
        }
    )
