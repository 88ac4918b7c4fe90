"""Reliability: divergence recorded (never as a result), clear early errors, CLI input kept, checkpoints that
belong to their config, valid JSON, total wall time, comparison table without duplicate rows."""

from __future__ import annotations

import importlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_toy_data

from pflnb import plots
from pflnb.algorithms import get_algorithm_class
from pflnb.cli import main
from pflnb.data.sources import DataFileError, read_idx
from pflnb.experiments import ExperimentConfig, cache_path, mean_std, profile_config, run, summary_table, sweep
from pflnb.experiments.baselines import comparison_table
from pflnb.experiments.cache import write_json_atomic
from pflnb.experiments.jobs import RunDiverged, RunDivergedWarning, load_record
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl.algorithm import ClientUpdate
from pflnb.fl.engine import check_finite
from pflnb.models import build_model

jobs_module = importlib.import_module("pflnb.experiments.jobs")


def _tiny(**kw):
    return profile_config("smoke", "digits5-lite", **{"rounds": 2, "model": "tiny-bn-cnn", **kw})


def _strict(path: Path) -> dict:
    def refuse(token: str):
        raise ValueError(f"bare {token} in {path}")

    return json.loads(Path(path).read_text(), parse_constant=refuse)


# ---------------------------------------------------------------------------------------------- divergence


def test_check_finite_names_round_client_and_quantity():
    ok = torch.ones(3)
    clients = [{"model": {"w": ok.clone()}}, {"model": {"w": ok.clone()}}]
    server = {"model": {"w": ok.clone()}, "acc_global": float("nan")}  # NaN Python floats are placeholders
    updates = {0: ClientUpdate({}, {}, {"loss": 0.5}), 1: ClientUpdate({}, {}, {"loss": 0.4, "steps": 3})}
    assert check_finite(4, updates, server, clients) is None
    clients[1]["model"]["w"][2] = float("inf")
    assert check_finite(4, updates, server, clients) == {
        "round": 4,
        "client": 1,
        "quantity": "client state model.w",
        "value": "inf",
    }
    clients[1]["model"]["w"][2] = 1.0
    server["model"]["w"][0] = float("nan")
    assert check_finite(4, updates, server, clients)["client"] is None
    assert check_finite(4, updates, server, clients)["quantity"] == "server state model.w"
    updates[0].metrics["loss"] = float("nan")  # a loss is reported before any state
    assert check_finite(4, updates, server, clients)["quantity"] == "train metric loss"
    assert check_finite(4, updates, server, clients)["client"] == 0


def test_check_finite_tells_an_overflowing_sum_of_finite_values_from_a_non_finite_value():
    """The fast test sums each tensor: finite values whose sum overflows are still finite (no divergence), and an
    +inf beside a -inf (a NaN sum) or a lone NaN among large values is found."""
    big = torch.full((4,), 3e38)  # float32: the sum overflows to inf, every value is finite
    updates = {0: ClientUpdate({}, {}, {"loss": 0.5})}
    assert check_finite(1, updates, {"model": {"w": big}}, [{"model": {"w": big.clone()}}]) is None
    both = torch.tensor([1.0, float("inf"), float("-inf")], dtype=torch.float64)
    found = check_finite(1, updates, {"model": {"w": big}}, [{"model": {"w": both}}])
    assert (found["client"], found["quantity"], found["value"]) == (0, "client state model.w", "inf")
    nan_in_big = big.clone()
    nan_in_big[3] = float("nan")
    assert check_finite(1, updates, {"bank": nan_in_big}, [{"model": {"w": big.clone()}}])["quantity"] == "server state bank"


class _NanAt:
    """Wraps FedAvg: the server state of round ``nan_round`` gets a NaN (losses stay finite)."""

    def __new__(cls, nan_round: int):
        base = get_algorithm_class("fedavg")

        class Broken(base):
            def aggregate(self, ctx, server, messages):
                out = super().aggregate(ctx, server, messages)
                if ctx.round == nan_round:
                    key = next(iter(out["model"]))
                    out["model"][key] = out["model"][key] * float("nan")
                return out

        return Broken.from_dict({})


def test_engine_stops_at_the_diverged_round():
    data = make_toy_data()
    settings = RunSettings(rounds=4, optim=OptimConfig(lr=0.05, batch_size=8), progress=False)
    rec = run_simulation(_NanAt(2), data, lambda: build_model("mlp", data.input_shape, data.num_classes), settings)
    assert rec["divergence"]["round"] == 2 and rec["divergence"]["client"] is None
    assert rec["divergence"]["quantity"].startswith("server state model.")
    assert [r["round"] for r in rec["rounds"]] == [1]  # nothing of the diverged round is kept as a result
    assert [e["round"] for e in rec["evals"]] == [1]
    assert "summary" not in rec and "final" not in rec


class _NanMessageAt:
    """Wraps FedAvg: in round ``nan_round`` client 0 sends a NaN (its loss stays finite), and a server step that reads
    a NaN raises, as FedMGDA+'s least squares does ('SVD did not converge')."""

    def __new__(cls, nan_round: int):
        base = get_algorithm_class("fedavg")

        class Broken(base):
            def finish_local(self, ctx, cid, server, client, plan, result):
                up = super().finish_local(ctx, cid, server, client, plan, result)
                if ctx.round == nan_round and cid == 0:
                    (name, state), *_ = [(k, v) for k, v in up.message.items() if isinstance(v, dict)]
                    key = next(iter(state))
                    up.message[name] = {**state, key: state[key] * float("nan")}
                return up

            def aggregate(self, ctx, server, messages):
                tensors = [t for m in messages.values() for v in m.values() if isinstance(v, dict) for t in v.values()]
                if any(not torch.isfinite(t).all() for t in tensors if isinstance(t, torch.Tensor)):
                    raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")
                return super().aggregate(ctx, server, messages)

        return Broken.from_dict({})


def test_a_non_finite_message_stops_the_run_before_the_server_step_reads_it():
    data = make_toy_data()
    settings = RunSettings(rounds=4, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, participation=1.0)
    model = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
    rec = run_simulation(_NanMessageAt(2), data, model, settings)  # no LinAlgError: the message check comes first
    assert rec["divergence"]["round"] == 2 and rec["divergence"]["client"] == 0
    assert rec["divergence"]["quantity"].startswith("message ") and rec["divergence"]["value"] == "nan"
    assert [r["round"] for r in rec["rounds"]] == [1] and "summary" not in rec


def test_diverged_run_is_recorded_cached_and_never_a_result(tmp_path):
    cfg = _tiny(lr=1e3)
    with pytest.warns(RunDivergedWarning, match=r"diverged at round 1, client \d+: train metric loss"):
        rec = run(cfg, root=tmp_path, progress=False, checkpoint_every=1)
    assert rec["status"] == "diverged" and "summary" not in rec
    assert rec["divergence"]["round"] == 1
    path = cache_path(cfg, tmp_path)
    cached = _strict(path)  # valid JSON for strict parsers
    assert cached["status"] == "diverged" and "summary" not in cached
    assert not path.with_suffix(".ckpt").exists()
    with pytest.warns(RunDivergedWarning, match="cached in"):  # the re-run says so, from the cache
        again = run(cfg, root=tmp_path, progress=False)
    assert again["status"] == "diverged"
    with pytest.warns(RunDivergedWarning), pytest.raises(RunDiverged, match="no final states"):
        run(cfg, root=tmp_path, progress=False, keep_final=True)
    df = summary_table([rec, run(_tiny(), root=tmp_path, progress=False)])
    assert df["diverged"].tolist() == [True, False]
    assert math.isnan(df["test_acc"][0]) and not math.isnan(df["test_acc"][1])


def _rec(method: str, seed: int, acc: float | None, key: str | None = None) -> dict:
    base = {"config": {"method": method, "dataset": "d", "seed": seed, "method_params": {}}, "key": key or f"{method}{seed}"}
    if acc is None:
        return {**base, "status": "diverged", "divergence": {"round": 3, "client": 0, "quantity": "train metric loss"}}
    summary = {"test_acc": acc, "last_test_acc": acc, "test_acc_worst": acc, "test_acc_client_std": 0.0, "best_round": 1}
    return {**base, "status": "finished", "summary": summary}


def test_mean_std_shows_diverged_instead_of_a_number():
    df = summary_table([_rec("a", 0, 0.5), _rec("a", 1, 0.7), _rec("b", 0, 0.9), _rec("b", 1, None)])
    table = mean_std(df, by=["method"], metrics=["test_acc"]).set_index("method")
    expected_std = 100 * float(np.std([0.5, 0.7], ddof=1))
    assert table.loc["a", "test_acc"] == f"60.00 ± {expected_std:.2f}"
    assert table.loc["a", "test_acc_mean"] == pytest.approx(60.0)
    assert table.loc["b", "test_acc"] == "diverged (1/2)"
    assert math.isnan(table.loc["b", "test_acc_mean"])
    assert table["diverged"].tolist() == [False, True] and table["seeds"].tolist() == [2, 2]


# ---------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(lr=float("nan")), "lr"),
        (dict(lr=float("inf")), "lr"),
        (dict(lr="nan"), "lr"),
        (dict(rounds="abc"), "rounds"),
        (dict(rounds=1.5), "rounds"),
        (dict(batch_size=2.5), "batch_size"),
        (dict(seed=-1), "seed"),
        (dict(device="nosuch"), "device"),
        (dict(momentum=float("nan")), "momentum"),
        (dict(weight_decay=-1.0), "weight_decay"),
        (dict(alpha=float("inf")), "alpha"),
        (dict(fractions=(0.6, float("nan"), 0.2)), "fractions"),
        (dict(method="fedprox", method_params={"mu": float("nan")}), "mu"),
        (dict(method="fedprox", method_params={"mu": "0.1"}), "mu"),
        (dict(data_root="/no/such/folder"), "data_root"),
        (dict(threads=0), "threads"),
    ],
)
def test_every_bad_field_is_a_clear_error_before_data(changes, field, monkeypatch, tmp_path):
    monkeypatch.setattr(jobs_module, "build_federated", lambda *a, **k: pytest.fail("data built before validation"))
    with pytest.raises(ValueError, match=field):
        run(_tiny(**changes), root=tmp_path, progress=False)


def test_sweep_rejects_duplicate_seeds(tmp_path):
    with pytest.raises(ValueError, match="seeds has repeated values 0"):
        sweep(_tiny(), seeds=[0, 0], root=tmp_path)


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_merges_repeated_set_and_rejects_conflicts(capsys, tmp_path, monkeypatch):
    import argparse

    from pflnb.cli import _add_common, _configs

    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    parser = argparse.ArgumentParser()
    _add_common(parser)
    argv = ["--profile", "smoke", "--set", "lr=0.01", "--set", "rounds=1", "--param", "mu=0.1", "--set", "lr=0.01"]
    (cfg,) = _configs(parser.parse_args(argv), ["fedprox"])
    assert (cfg.lr, cfg.rounds, cfg.method_params) == (0.01, 1, {"mu": 0.1})  # every --set kept; an equal repeat is fine
    common = ["run", "--method", "fedprox", "--profile", "smoke", "--quiet"]
    assert main([*common, "--set", "rounds=1", "--set", "rounds=2"]) == 2
    assert "rounds twice" in capsys.readouterr().err
    assert main([*common, "--param", "mu=0.1", "--param", "mu=0.2"]) == 2
    assert "mu twice" in capsys.readouterr().err
    assert main([*common, "--seeds", "0", "0"]) == 2
    assert "--seeds repeats [0]" in capsys.readouterr().err
    assert main([*common, "--data-root", str(tmp_path / "missing")]) == 2
    assert "data_root" in capsys.readouterr().err
    assert main([*common, "--set", "rounds=abc"]) == 2
    assert "rounds must be an integer" in capsys.readouterr().err
    assert main([*common, "--set", "lr=NaN"]) == 2
    assert "lr must be a finite number" in capsys.readouterr().err
    assert main([*common, "--set", "seed=3"]) == 2
    assert "--seeds" in capsys.readouterr().err


def test_cli_reports_divergence_with_its_own_exit_status(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    argv = ["run", "--method", "fedavg", "--profile", "smoke", "--quiet", "--set", "rounds=1", "model=tiny-bn-cnn", "lr=1e6"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    assert "diverged (1/1)" in out and "diverged at round 1" in err
    assert main(argv) == 3  # from the cache: still diverged, never a number
    assert "diverged (1/1)" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- files


def test_unusable_cached_records_are_set_aside_recomputed_and_listed(tmp_path):
    from pflnb.experiments.cache import RecordSetAsideWarning

    cfg = _tiny(rounds=1)
    rec = run(cfg, root=tmp_path, progress=False)
    path = cache_path(cfg, tmp_path)
    text = path.read_text()
    stale = {**json.loads(text), "kernels": {**rec["kernels"], "mode": "native"}}  # made under other CPU kernels
    bad_ones = [text[: len(text) // 2], json.dumps([1, 2]), json.dumps({"key": cfg.key()}), json.dumps({**rec, "summary": None})]
    changed = {**json.loads(text), "kernels": {**rec["kernels"], "MKL_CBWR": "AVX2"}}  # the mode's settings since changed
    bad_ones += [json.dumps({**rec, "key": "0" * 16}), json.dumps(stale), json.dumps(changed)]
    reasons = ["truncated or not JSON", *["wrong shape"] * 4, "made under CPU kernels native, not portable"]
    reasons += ["made under portable kernels with {'MKL_CBWR': 'AVX2'}, which that mode no longer sets"]
    for bad, reason in zip(bad_ones, reasons):
        path.write_text(bad)
        with pytest.warns(RecordSetAsideWarning, match=rf"{path.name} -> .*\.set-aside \(cached record .*{reason}"):
            again = run(cfg, root=tmp_path, progress=False)
        assert again["evals"] == rec["evals"]  # recomputed, the same numbers
        assert load_record(path, cfg.key())["evals"] == rec["evals"]
    kept = sorted(path.parent.glob(f"{path.name}.*.set-aside"))
    assert sorted(p.read_text() for p in kept) == sorted(bad_ones)  # every bad file kept, never deleted


def test_corrupt_gz_data_file_names_the_file(tmp_path):
    from pflnb.data.fake import write_idx

    path = tmp_path / "train-images-idx3-ubyte.gz"
    write_idx(path, np.zeros((20, 4, 4), dtype=np.uint8))
    assert read_idx(path).shape == (20, 4, 4)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 12])  # truncated gzip stream
    with pytest.raises(DataFileError, match=rf"{path.name} cannot be read.*delete it"):
        read_idx(path)
    path.write_bytes(b"not a gzip file at all")
    with pytest.raises(DataFileError, match=path.name):
        read_idx(path)


def test_write_json_is_strict_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": [1.0, float("nan"), float("inf"), -float("inf")], "b": np.float32(2.5)})
    assert _strict(path) == {"a": [1.0, "NaN", "Infinity", "-Infinity"], "b": 2.5}
    assert os.listdir(tmp_path) == ["r.json"]


# ---------------------------------------------------------------------------------------------- checkpoints


def _checkpoint(cfg, root, stop_after: int, tag: str | None = None, tamper=None) -> Path:
    """A checkpoint of ``cfg`` after ``stop_after`` rounds, written by the engine where run() looks for it."""
    from pflnb.algorithms import make_algorithm
    from pflnb.data import build_federated

    path = cache_path(cfg, root).with_suffix(".ckpt")
    data = build_federated(cfg.data_spec(), seed=cfg.seed)
    settings = cfg.settings(False, str(path), 1)
    settings.stop_after, settings.checkpoint_tag = stop_after, cfg.key() if tag is None else tag
    run_simulation(make_algorithm(cfg.method), data, lambda: build_model(cfg.model, data.input_shape, data.num_classes), settings)
    if tamper:
        payload = torch.load(path, weights_only=False)
        tamper(payload)
        torch.save(payload, path)
    return path


def test_checkpoint_resumes_only_its_config_and_is_removed_in_every_mode(tmp_path):
    cfg = _tiny(rounds=3)
    full = run(cfg, cache=False, progress=False)
    ckpt = _checkpoint(cfg, tmp_path, stop_after=1)
    resumed = run(cfg, root=tmp_path, cache=False, progress=False, checkpoint_every=1)  # --no-cache resumes ...
    assert resumed["evals"] == full["evals"]
    assert not ckpt.exists()  # ... and removes the checkpoint
    _checkpoint(cfg, tmp_path, stop_after=1, tag="another-config")
    with pytest.raises(ValueError, match=rf"{ckpt.name} belongs to another config.*--force"):
        run(cfg, root=tmp_path, progress=False, checkpoint_every=1)
    ckpt.write_bytes(ckpt.read_bytes()[:100])  # truncated
    with pytest.raises(ValueError, match=rf"{ckpt.name} is unreadable.*--force"):
        run(cfg, root=tmp_path, progress=False, checkpoint_every=1)


def test_force_ignores_a_checkpoint(tmp_path):
    cfg = _tiny(rounds=3)

    def finished(payload):  # a stale checkpoint that claims every round is done
        payload["round"] = 3

    ckpt = _checkpoint(cfg, tmp_path, stop_after=1, tamper=finished)
    rec = run(cfg, root=tmp_path, progress=False, checkpoint_every=1, force=True)
    assert [r["round"] for r in rec["rounds"]] == [1, 2, 3]
    assert not ckpt.exists()


def test_wall_time_covers_every_resumed_segment(tmp_path):
    base = get_algorithm_class("fedavg")

    class SlowFirstRound(base):
        def local_train(self, ctx, cid, server, client):
            if ctx.round == 1 and cid == 0:
                time.sleep(0.4)
            return super().local_train(ctx, cid, server, client)

    data = make_toy_data()
    ckpt = str(tmp_path / "r.ckpt")

    def go(**kw):
        settings = RunSettings(
            3, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, checkpoint_every=1, checkpoint_path=ckpt
        )
        for k, v in kw.items():
            setattr(settings, k, v)
        model_fn = lambda: build_model("mlp", data.input_shape, data.num_classes)  # noqa: E731
        return run_simulation(SlowFirstRound.from_dict({}), data, model_fn, settings)

    go(stop_after=1)
    first = torch.load(ckpt, weights_only=False)["wall_time_s"]
    assert first >= 0.4
    t0 = time.perf_counter()
    rec = go()
    second = time.perf_counter() - t0
    assert rec["wall_time_s"] >= first + sum(sum(r["time"].values()) for r in rec["rounds"][1:])
    assert rec["wall_time_s"] <= first + second + 1e-6


def _finished_after_round_one(payload):  # a stale checkpoint that claims the run of 2 rounds ended after its first
    payload["round"] = 2


def test_a_declared_experiments_runs_and_a_p_model_job_resume_their_checkpoints(tmp_path, monkeypatch):
    """``run_experiment(checkpoint_every=k)`` hands k to every tuning and verdict run, and FedPG's P-model job to the
    run it scores: each resumes the checkpoint it finds (a stale one that claims the run ended after round 1 leaves a
    record of round 1 alone and is removed); without k, or with ``force``, that checkpoint is not read; a job that cannot
    resume says so."""
    from pflnb.experiments.executors import Serial, execute
    from pflnb.experiments.jobs import Job, RunJob, StackedRuns, with_checkpoints
    from pflnb.experiments.paper import Arm, Experiment, Paper, Tune, run_experiment
    from pflnb.papers.fedpg.experiments import PModelJob

    tune = Tune(grid={"lr": {"smoke": (0.05,)}}, seeds={"smoke": [7]})
    arm = Arm("FedAvg", "fedavg")
    toy = Paper(
        "toy",
        "toy",
        (
            Experiment(
                "main", "", "digits5-lite", (arm,), {"smoke": [0]}, {"smoke": {"rounds": 2, "model": "tiny-bn-cnn"}}, tune=tune
            ),
        ),
        (),
    )
    rounds = lambda root, cfg: [r["round"] for r in load_record(RunJob(cfg).path(root))["rounds"]]  # noqa: E731

    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path / "plain"))
    plain = run_experiment(toy, "main", "smoke", executor=Serial(), progress=False)
    (cfg_verdict,) = [ExperimentConfig.from_dict(r["config"]) for r in plain.records]
    (cfg_tuning,) = [cfg for _, cfg in toy.experiment("main").tuning_runs("smoke")]
    assert rounds(tmp_path / "plain", cfg_tuning) == rounds(tmp_path / "plain", cfg_verdict) == [1, 2]
    for k, root, expected in ((1, tmp_path / "resumed", [1]), (0, tmp_path / "ignored", [1, 2])):
        monkeypatch.setenv("PFLNB_RESULTS", str(root))
        ckpts = [_checkpoint(cfg, root, stop_after=1, tamper=_finished_after_round_one) for cfg in (cfg_tuning, cfg_verdict)]
        run_experiment(toy, "main", "smoke", executor=Serial(), progress=False, checkpoint_every=k)
        assert rounds(root, cfg_tuning) == rounds(root, cfg_verdict) == expected
        assert not any(c.exists() for c in ckpts)

    cfg = _tiny(method="fedavg-ft")
    root = tmp_path / "pm"
    ckpt = _checkpoint(cfg, root, stop_after=1, tamper=_finished_after_round_one)
    (record,) = execute([with_checkpoints(PModelJob(cfg, cs=(0.0, 1.0)), 1)], Serial(), root=root, progress=False)
    assert [r["round"] for r in record["rounds"]] == [1] and "pm" in record and not ckpt.exists()
    _checkpoint(cfg, root, stop_after=1, tamper=_finished_after_round_one)
    (record,) = execute([with_checkpoints(PModelJob(cfg, cs=(0.0, 1.0)), 1)], Serial(), root=root, progress=False, force=True)
    assert [r["round"] for r in record["rounds"]] == [1, 2] and not ckpt.exists()  # force: from scratch

    class Other(Job):  # not a dataclass with checkpoint_every: no engine run to resume
        pass

    assert with_checkpoints(Other(), 0).__class__ is Other
    stack = StackedRuns(tuple(RunJob(_tiny(seed=s, runner="stacked")) for s in (0, 1)))
    assert [j.checkpoint_every for j in with_checkpoints(stack, 3).jobs] == [3, 3]  # each run of a stack
    with pytest.raises(ValueError, match="checkpoint_every must be an integer >= 0"):
        with_checkpoints(RunJob(cfg), -1)
    with pytest.raises(TypeError, match="Other cannot save resumable state"):
        with_checkpoints(Other(), 1)


# ---------------------------------------------------------------------------------------------- tables, figures


def test_comparison_table_one_row_per_setting_and_method():
    fs = [_rec("fedavg", 0, 0.5), _rec("fedavg", 1, 0.7), _rec("fedavg-ft", 0, 0.8)]
    ls = [_rec("fedavg", 0, 0.2, key="x0"), _rec("fedavg", 1, 0.4, key="x1")]
    table = comparison_table({"feature-shift": fs + fs[:2], "label-skew": ls})  # fedavg listed twice
    assert list(zip(table.setting, table.method)) == [
        ("feature-shift", "fedavg"),
        ("feature-shift", "fedavg-ft"),
        ("label-skew", "fedavg"),
    ]
    row = table[(table.setting == "feature-shift") & (table.method == "fedavg")].iloc[0]
    assert row.seeds == 2 and row.test_acc_mean == pytest.approx(60.0)
    assert not table.duplicated(["setting", "method"]).any()
    with pytest.raises(ValueError, match="fedavg' seed 0 has two different runs"):
        comparison_table({"feature-shift": [_rec("fedavg", 0, 0.5), _rec("fedavg", 0, 0.6, key="other")]})
    assert isinstance(table, pd.DataFrame)


def test_figures_folder_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_FIGURES", str(tmp_path / "figs"))
    assert plots.figure_dir("quickstart", "cpu") == tmp_path / "figs" / "quickstart"
    assert plots.figure_dir("quickstart", "smoke") == tmp_path / "figs" / "quickstart"
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    assert plots.save(fig, "x", "sub") == tmp_path / "figs" / "sub" / "x.png"
    plt.close(fig)
    monkeypatch.delenv("PFLNB_FIGURES")
    assert plots.figure_dir("quickstart", "cpu") == plots.FIGURES / "quickstart"
