import json

import pytest

from pflnb.cli import main
from pflnb.experiments import (
    ExperimentConfig,
    cache_path,
    client_table,
    curve_table,
    mean_std,
    profile_config,
    profile_seeds,
    run,
    summary_table,
    sweep,
)


def _smoke(**kw):
    return profile_config("smoke", "digits5-lite", **kw)


def test_key_is_stable_and_ignores_bookkeeping():
    a = _smoke()
    assert a.key() == _smoke().key()
    assert a.key() == a.replace(device="cpu", data_root="/elsewhere", profile="cpu").key()
    assert a.key() != a.replace(seed=1).key()
    assert a.key() != a.replace(method_params={"weights": "uniform"}).key()


def test_profiles_and_seeds():
    assert profile_seeds("smoke") == [0] and len(profile_seeds("cpu")) == 3
    assert profile_config("smoke").rounds < profile_config("cpu").rounds
    with pytest.raises(ValueError, match="profile"):
        profile_config("huge")
    with pytest.raises(ValueError, match="dataset"):
        profile_config("smoke", "imagenet")


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(method="fedmagic"), "unknown method"),
        (dict(dataset="imagenet"), "dataset"),
        (dict(profile="huge"), "profile"),
        (dict(partition="dirichlet", alpha=0.0), "alpha"),
        (dict(partition="dirichlet", alpha=-1.0), "alpha"),
        (dict(rounds=0), "rounds"),
        (dict(model="resnet999"), "unknown model"),
        (dict(participation=1.5), "participation"),
        (dict(method="fedavg", method_params={"lam": 1}), "unknown parameter"),
    ],
)
def test_bad_configs_fail_before_training(changes, match):
    with pytest.raises(ValueError, match=match):
        _smoke().replace(**changes).validate()


def test_more_clients_than_samples_fails_before_training(tmp_path):
    cfg = _smoke(partition="iid", num_clients=2000)
    with pytest.raises(ValueError, match="client"):
        run(cfg, root=tmp_path)
    assert not any(tmp_path.rglob("*.json"))


def test_unknown_field_in_replace():
    with pytest.raises(ValueError, match="unknown config field"):
        ExperimentConfig().replace(n_rounds=3)


def test_run_caches_and_reloads(tmp_path):
    cfg = _smoke(method="fedavg")
    rec = run(cfg, root=tmp_path, progress=False)
    path = cache_path(cfg, tmp_path)
    assert path.exists()
    stored = json.loads(path.read_text())
    assert stored["key"] == cfg.key() and stored["config"]["method"] == "fedavg"
    again = run(cfg, root=tmp_path, progress=False)
    assert again["summary"] == rec["summary"] and again["wall_time_s"] == rec["wall_time_s"]  # loaded, not re-run
    assert rec["summary"]["best_round"] in (1, 2)


def test_sweep_tables(tmp_path):
    base = _smoke()
    records = sweep(base, methods=["fedavg", "local"], seeds=[0, 1], root=tmp_path, progress=False)
    df = summary_table(records)
    assert len(df) == 4 and set(df.method) == {"fedavg", "local"}
    ms = mean_std(df, by=["method"])
    assert list(ms.seeds) == [2, 2]
    row = ms.set_index("method").loc["fedavg"]
    assert row.test_acc_mean == pytest.approx(100 * df[df.method == "fedavg"].test_acc.mean())
    ct = client_table(records)
    assert len(ct) == 4 * 5 and set(ct.client) == set(records[0]["clients"])
    cv = curve_table(records)
    assert set(cv["round"]) == {1, 2}


def test_cli_list_and_errors(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "fedavg" in out and "digits5-lite" in out
    assert main(["run", "--method", "fedmagic", "--profile", "smoke"]) == 2
    assert "unknown method" in capsys.readouterr().err
    assert main(["run", "--method", "fedavg", "--profile", "smoke", "--dataset", "fmnist", "--set", "alpha=0"]) == 2
    assert "alpha" in capsys.readouterr().err
    assert main(["run", "--method", "fedavg", "--profile", "smoke", "--set", "rounds=0"]) == 2
    assert main(["run", "--method", "fedavg", "--profile", "smoke", "--set", "roundz=3"]) == 2


def test_cli_run_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    assert main(["sweep", "--methods", "fedavg", "fedbn", "--profile", "smoke", "--quiet", "--set", "rounds=1"]) == 0
    out = capsys.readouterr().out
    assert "fedbn" in out and "±" in out
    assert len(list(tmp_path.rglob("*.json"))) == 2


def test_claims_helpers():
    from pflnb.experiments import Claim, claims_table, mean_std_str
    from pflnb.experiments.claims import identity

    assert mean_std_str([0.5, 0.7]) == "60.0 ± 14.1 (n=2)"
    assert mean_std_str([0.5]) == "50.0 ± 0.0 (n=1)"
    df = claims_table([Claim("a equals b", "exact", identity(1e-15, 1e-12))])
    assert list(df.columns) == [
        "claim",
        "paper",
        "ours",
        "verdict",
        "category",
        "seeds",
        "note",
        "stand_in",
        "source",
        "cite",
        "paper_effect",
        "effect_vs_ours",
        "wall_clock",
        "fragile",
        "reads",
    ]
    assert df.verdict[0] == "reproduced"


def test_missing_fmnist_falls_back_to_digits5_lite_with_a_note(tmp_path, monkeypatch, capsys):
    from pflnb.data import sources
    from pflnb.experiments import with_available_data

    monkeypatch.setenv("PFLNB_DOWNLOAD", "0")
    monkeypatch.setenv("PFLNB_DATA", str(tmp_path))
    monkeypatch.setattr(sources, "FASHION_MNIST_SYSTEM", tmp_path / "nowhere")
    monkeypatch.chdir(tmp_path)
    from pflnb.data import build

    build.clear_cache()
    cfg = profile_config("smoke", "fmnist", data_root=str(tmp_path))
    try:
        new = with_available_data(cfg)
    except Exception as err:  # pragma: no cover - shows the reason if the environment has other data paths
        pytest.fail(f"fallback failed: {err}")
    if new.dataset == "fmnist":
        pytest.skip("Fashion-MNIST reachable through another configured path")
    assert new.dataset == "digits5-lite" and new.partition == cfg.partition
    assert "falling back to digits5-lite" in capsys.readouterr().out
    new.validate()
    with pytest.raises(Exception, match="Fashion-MNIST|fashion|fmnist"):
        with_available_data(cfg, fallback=False)


def test_run_many_in_worker_processes_equals_serial(tmp_path, monkeypatch):
    from pflnb.experiments import EvalProtocol, Processes, Serial, run_many

    configs = [_smoke(method=m, seed=s) for m in ("fedavg", "local") for s in (0, 1)]
    serial = run_many(configs, cache=False, progress=False, executor=Serial())
    run(configs[1], root=tmp_path, progress=False)  # one cached record is loaded, the other three run in workers
    parallel = run_many(configs, root=tmp_path, progress=False, executor=Processes(2))
    assert [r["config"] for r in parallel] == [c.to_dict() for c in configs]  # input order kept
    for a, b in zip(serial, parallel):
        assert a["evals"] == b["evals"] and a["summary"] == b["summary"]
    assert all(cache_path(c, tmp_path).exists() for c in configs)
    monkeypatch.setenv("PFLNB_WORKERS", "0")
    with pytest.raises(ValueError, match="PFLNB_WORKERS"):
        run_many(configs, root=tmp_path, progress=False)
    with pytest.raises(ValueError, match="picklable"):
        run_many(configs, cache=False, progress=False, executor=Processes(2), protocol=EvalProtocol("id", lambda d, s: d))
